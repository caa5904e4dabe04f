import Foundation
import SettleBase
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The fault switch covers every store the simulator serves, Huawei's and ONE store's fakes too,
/// and one switch on any port reaches them all.
final class SimulatorFaultStoresTests: EndToEndTestCase {
    func testEveryServedStore_takesItsFault_fromAnyPort() throws {
        let simulator = try SettleBinary.start(["simulator", "--listen", "127.0.0.1:0",
                                                "--huawei-key", world.folder + "/huawei.p8",
                                                "--one-store-key", world.folder + "/one-store-secret"],
                                               outputFolder: world.folder)
        defer { if simulator.isRunning { simulator.send(SIGKILL); _ = simulator.wait() } }
        var banner = ""
        XCTAssertTrue(eventually(within: 20) {
            banner = (try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? ""
            return banner.contains("one_store.api_url")
        }, banner)
        func url(_ key: String) throws -> String {
            let line = try XCTUnwrap(banner.split(separator: "\n").first { $0.hasPrefix(key + ": ") }, banner)
            return String(line.dropFirst(key.count + 2))
        }
        let first = try XCTUnwrap(banner.split(separator: "\n").first)
        let apple = String(first.dropFirst("settle simulator listening on ".count))
        let huawei = try url("huawei.api_url")
        let oneStore = try url("one_store.api_url").replacingOccurrences(of: "/commercial", with: "")
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        let shown = try client.send(HTTPRequest(method: "GET", url: huawei + "/simulator/faults"))
        let faults = try JSONValue.parse(shown.body)
        XCTAssertEqual(faults.objectMembers?.map(\.0), ["app_store", "huawei", "one_store"], "\(faults)")

        func post(_ body: String, to base: String) throws -> Int {
            try client.send(HTTPRequest(method: "POST", url: base + "/simulator/faults",
                                        headers: [HTTPHeader("Content-Type", "application/json")],
                                        body: Data(body.utf8))).status
        }
        XCTAssertEqual(try post(#"{"store": "huawei", "mode": "503"}"#, to: apple), 200)
        XCTAssertEqual(try post(#"{"store": "one_store", "mode": "429", "seconds": 7}"#, to: apple), 200)
        XCTAssertEqual(try client.send(HTTPRequest(method: "POST", url: huawei + "/anything")).status, 503)
        let limited = try client.send(HTTPRequest(method: "POST", url: oneStore + "/commercial/v7/oauth/token"))
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(limited.header("Retry-After"), "7")
        XCTAssertEqual(try post(#"{"store": "huawei", "mode": "none"}"#, to: oneStore), 200)
        XCTAssertNotEqual(try client.send(HTTPRequest(method: "POST", url: huawei + "/anything")).status, 503)
        XCTAssertEqual(try post(#"{"store": "huawei", "mode": "sideways"}"#, to: oneStore), 400)
        simulator.send(SIGTERM)
        XCTAssertEqual(simulator.wait().status, 0)
    }
}
