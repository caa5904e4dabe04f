import Foundation
import SettleBase
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A real browser for the console's tests: Debian's `chromium`, headless, driven by
/// `chromedriver` through the W3C WebDriver protocol (https://www.w3.org/TR/webdriver2/), spoken
/// with the project's own HTTP client (libcurl). Missing chromium or chromedriver is a failure
/// saying what to install, never a skip.
final class WebDriver {
    static let chromedriver = "/usr/bin/chromedriver"
    static let chromium = "/usr/bin/chromium"
    static let missing = "chromium and chromium-driver are needed for the browser tests: "
        + "apt-get install -y --no-install-recommends chromium chromium-driver fonts-dejavu-core (.ci/run installs them)"
    /// An element reference's key in JSON is "element-6066-11e4-…": the spec's own, or the one
    /// this chromedriver sends.
    static let elementKeyPrefix = "element-6066-11e4-"

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let process: Process
    private let base: String
    private let profile: String
    private(set) var session = ""
    private let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 60))

    /// Starts chromedriver on a free loopback port and opens a headless session.
    init(folder: String) throws {
        for path in [Self.chromedriver, Self.chromium] where !FileManager.default.isExecutableFile(atPath: path) {
            throw Failure(description: "\(path) not found: " + Self.missing)
        }
        let port = try Self.freePort()
        base = "http://127.0.0.1:\(port)"
        profile = folder + "/chromium-profile-\(UUID().uuidString)"
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.chromedriver)
        process.arguments = ["--port=\(port)", "--allowed-ips=127.0.0.1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: try Self.touch(folder + "/chromedriver.log")))
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while (try? client.send(HTTPRequest(method: "GET", url: base + "/status")))?.status != 200 {
            guard Date() < deadline, process.isRunning else { throw Failure(description: "chromedriver did not start on port \(port)") }
            usleep(50_000)
        }
        let capabilities: JSONValue = .object([("capabilities", .object([("alwaysMatch", .object([
            ("browserName", .string("chrome")),
            ("goog:chromeOptions", .object([
                ("binary", .string(Self.chromium)),
                ("args", .array(["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
                                 "--user-data-dir=\(profile)", "--no-first-run", "--disable-extensions"].map(JSONValue.string))),
            ])),
        ]))]))])
        let created = try command("POST", "/session", capabilities, sessionless: true)
        guard let id = created["sessionId"]?.looseString else { throw Failure(description: "no session: \(created)") }
        session = id
    }

    deinit { quit() }

    func quit() {
        if !session.isEmpty { _ = try? command("DELETE", "", nil) }
        session = ""
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: profile)
    }

    // MARK: - What a person does

    func open(_ url: String) throws { _ = try command("POST", "/url", .object([("url", .string(url))])) }

    var title: String { get throws { try command("GET", "/title", nil).looseString ?? "" } }
    var currentURL: String { get throws { try command("GET", "/url", nil).looseString ?? "" } }

    /// The first element matching a CSS selector.
    func find(_ css: String) throws -> String {
        let found = try command("POST", "/element", .object([("using", .string("css selector")), ("value", .string(css))]))
        guard let id = found.objectMembers?.first(where: { $0.0.hasPrefix(Self.elementKeyPrefix) })?.1.looseString else { throw Failure(description: "no element \(css): \(found)") }
        return id
    }

    /// The text a person sees in the element (rendered, so hidden text is left out).
    func text(_ css: String) throws -> String { try command("GET", "/element/\(try find(css))/text", nil).looseString ?? "" }

    func type(_ css: String, _ text: String) throws {
        _ = try command("POST", "/element/\(try find(css))/value", .object([("text", .string(text))]))
    }

    func click(_ css: String) throws { _ = try command("POST", "/element/\(try find(css))/click", .object([])) }

    /// Clicks what loads another page (a link, a form's button) and waits until the browser has
    /// left this one: chromedriver may answer the click before the navigation begins, and a
    /// read then would see the old page. The old page's root element going stale is the sign.
    func clickAndWaitForNextPage(_ css: String) throws {
        let root = try find("html")
        try click(css)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let response = try client.send(HTTPRequest(method: "GET", url: base + "/session/\(session)/element/\(root)/name"))
            if response.status != 200 { return }  // stale element reference: a new document
            usleep(20_000)
        }
        throw Failure(description: "clicking \(css) did not leave the page within 15 s")
    }

    /// A PNG of the window.
    func screenshot() throws -> Data {
        guard let text = try command("GET", "/screenshot", nil).looseString, let data = Data(base64Encoded: text) else {
            throw Failure(description: "no screenshot")
        }
        return data
    }

    // MARK: - The protocol

    private func command(_ method: String, _ path: String, _ body: JSONValue?, sessionless: Bool = false) throws -> JSONValue {
        let url = base + (sessionless ? "" : "/session/\(session)") + path
        let response = try client.send(HTTPRequest(method: method, url: url,
                                                   headers: [HTTPHeader("Content-Type", "application/json; charset=utf-8")],
                                                   body: body.map { Data($0.serialized().utf8) } ?? Data()))
        let json = try JSONValue.parse(response.body)
        guard response.status == 200 else { throw Failure(description: "\(method) \(path): \(response.status) \(json)") }
        return json["value"] ?? .null
    }

    private static func touch(_ path: String) throws -> String {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        return path
    }

    /// A port nothing listens on now: bound to 0, read back, closed.
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
