import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleConfig
@testable import SettleModel
@testable import SettleLedger

/// A console under test: a real ledger (SQLite file or PostgreSQL schema), a real `WebConsole`
/// on 127.0.0.1 (a port of its own), and real HTTP through libcurl. The clock is the world's
/// manual one, so throttles and token lifetimes are turned, never waited for.
class WebConsoleTestCase: XCTestCase {
    var world: TestWorld!
    var schemas: [String] = []
    var consoles: [WebConsole] = []
    let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 20))

    /// One ledger engine: the ledger and a way to write rows as a backend would.
    struct Engine {
        var name: String
        var ledger: any SettleLedger
        var execute: (String) throws -> Void
        /// The SQLite file, whose bytes prove a read-only console wrote nothing.
        var path: String?
    }

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig()
    }

    override func tearDown() {
        consoles.forEach { $0.stop() }
        consoles = []
        schemas.forEach(TestPostgres.drop(schema:))
        world = nil
    }

    func sqlite() throws -> Engine {
        let path = world.folder + "/web-\(UUID().uuidString).sqlite3"
        return Engine(name: "SQLite", ledger: try SQLiteLedger(path: path, time: world.time),
                      execute: { sql in try SQLiteDatabase(path: path, mode: .readWrite).execute(sql) }, path: path)
    }

    func postgres() throws -> Engine {
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        return Engine(name: "PostgreSQL", ledger: try PostgresLedger(url: fresh.url, time: world.time), execute: { sql in
            let connection = try PostgresConnection(url: fresh.url)
            defer { connection.close() }
            try connection.execute(sql)
        })
    }

    /// Runs `body` on SQLite, then PostgreSQL; a failure names the engine.
    func onEachEngine(_ body: (Engine) throws -> Void) throws {
        for engine in [try sqlite(), try postgres()] {
            do { try body(engine) } catch { XCTFail("\(engine.name): \(error)") }
        }
    }

    /// Starts a console on the ledger; returns its base URL ("http://127.0.0.1:PORT").
    func start(_ ledger: any SettleLedger, actions: Bool = false, users: WebUsers? = nil, log: Log = .silent,
               configuration: Configuration? = nil) throws -> String {
        let console = try WebConsole(listen: "127.0.0.1:0", configuration: configuration ?? world.configuration(), ledger: ledger,
                                     users: users, actions: actions, time: world.time, log: log)
        consoles.append(console)
        return "http://127.0.0.1:\(console.port)"
    }

    func get(_ base: String, _ path: String, headers: [HTTPHeader] = []) throws -> HTTPResponse {
        try client.send(HTTPRequest(method: "GET", url: base + path, headers: headers))
    }

    func post(_ base: String, _ path: String, _ form: [(String, String)], headers: [HTTPHeader] = []) throws -> HTTPResponse {
        let body = form.map { "\(Self.formEncode($0.0))=\(Self.formEncode($0.1))" }.joined(separator: "&")
        return try client.send(HTTPRequest(method: "POST", url: base + path,
                                           headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded")] + headers,
                                           body: Data(body.utf8)))
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    func text(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    /// The CSRF token of the order page's forms, as a browser would read it.
    func csrfToken(_ base: String, order: String, headers: [HTTPHeader] = []) throws -> String {
        let page = text(try get(base, "/orders/\(HTML.pathSegment(order))", headers: headers))
        guard let start = page.range(of: "name=\"csrf\" value=\""), let end = page[start.upperBound...].firstIndex(of: "\"") else {
            XCTFail("no CSRF token on the page of \(order)")
            return ""
        }
        return String(page[start.upperBound..<end])
    }

    func enqueue(_ ledger: any SettleLedger, _ id: String, user: String = "u-1", transaction: String? = "100",
                 receipt: String? = nil) throws {
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: user, productId: world.coins, transactionId: transaction,
                                        receipt: receipt ?? world.receipt(id)))
    }

    /// Every byte of the files an SQLite ledger is made of (the database, its WAL and shared memory).
    func ledgerBytes(_ path: String) -> [Data?] {
        [path, path + "-wal"].map { FileManager.default.contents(atPath: $0) }
    }

    static func basic(_ user: String, _ password: String) -> HTTPHeader {
        HTTPHeader("Authorization", "Basic " + Data("\(user):\(password)".utf8).base64EncodedString())
    }
}
