import Foundation
import Synchronization
import XCTest
import SettleApp
import SettleBase
import SettleTesting
import SettleOneStore
import SettleOneStoreSimulator
#if canImport(Glibc)
import Glibc
#endif

/// End-to-end tests of ONE store orders: the built `settle` against the fake ONE store
/// (`FakeOneStore`) on a loopback server of this test process, with the world's hook scripts.
class OneStoreTestCase: EndToEndTestCase {
    static let licenseKey: RSAPrivateKey = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
    static let secret = "one-store-client-secret-SECRETONESTORE"
    let gems = "os_gems_100"
    let unlock = "os_unlock"

    nonisolated(unsafe) var fake: FakeOneStore!
    nonisolated(unsafe) var oneStore: LoopbackHTTPServer!
    nonisolated(unsafe) var daemons: [SettleBinary.Running] = []
    /// Each acknowledge or consume, with how many grants the hook had made when ONE store was told.
    final class Finishes: Sendable {
        let calls = Mutex<[(path: String, deliveriesSoFar: Int)]>([])
    }
    let finishes = Finishes()
    var revokesPath: String { world.folder + "/revokes.log" }
    var revokes: [String] { ((try? String(contentsOfFile: revokesPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try world.write("one-store-secret", Self.secret, mode: 0o600)
        try world.write("one-store-license.txt", Self.licenseKey.subjectPublicKeyInfo.base64EncodedString() + "\n")
        let fake = FakeOneStore(clientId: "0000000001", clientSecret: Self.secret, packageName: "com.example.game",
                                licenseKey: Self.licenseKey, time: world.time)
        self.fake = fake
        let (finishes, deliveriesPath) = (self.finishes, world.deliveriesPath)
        oneStore = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/acknowledge") || request.path.hasSuffix("/consume") {
                let delivered = ((try? String(contentsOfFile: deliveriesPath, encoding: .utf8)) ?? "").split(separator: "\n").count
                finishes.calls.withLock { $0.append((request.path, delivered)) }
            }
            return fake.handle(request)
        }
        try world.write("revoke.sh", """
            #!/bin/sh
            cat > /dev/null
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(revokesPath)"
            exit 0
            """, mode: 0o755)
        try writeOneStoreConfig()
    }

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        oneStore?.stop()
        try super.tearDownWithError()
    }

    var oneStoreSection: [(String, JSONValue)] {
        [("client_id", .string("0000000001")), ("package_name", .string("com.example.game")),
         ("client_secret_file", .string("one-store-secret")), ("license_key_file", .string("one-store-license.txt")),
         ("market_code", .string("MKT_ONE")), ("api_url", .string(oneStore.baseURL + "/commercial")),
         ("sandbox_url", .string(oneStore.baseURL + "/sandbox"))]
    }

    func writeOneStoreConfig(hook: String? = nil, section: [(String, JSONValue)] = [], extra: [(String, JSONValue)] = []) throws {
        try world.writeConfig(hook: hook, overrides: [
            ("products", .object([
                (world.coins, .object([("type", .string("consumable"))])),
                (gems, .object([("type", .string("consumable")), ("store", .string("one_store")), ("grant", .object([("gems", .number(100))]))])),
                (unlock, .object([("type", .string("non_consumable")), ("store", .string("one_store"))])),
            ])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("delivery", .object([("command", .array([.string(hook ?? world.folder + "/grant.sh")])),
                                  ("revoke_command", .array([.string(revokesPath.replacingOccurrences(of: "revokes.log", with: "revoke.sh"))])),
                                  ("timeout_seconds", .number(10))])),
            ("one_store", .object(TestWorld.merge(oneStoreSection, section))),
        ] + extra)
    }

    func token(_ name: String) -> String { "ostok-\(name)-SECRETONESTORETOKEN+x=y" }

    @discardableResult
    func scriptPurchase(_ id: String, product: String? = nil, user: String? = "u-1", market: String = "MKT_ONE",
                        host: String = "commercial") -> String {
        let token = token(id)
        fake.script(FakeOneStore.Purchase(host: host, market: market, productId: product ?? gems, token: token, purchaseId: id,
                                          purchaseTimeMs: (world.time.unixSeconds - 60) * 1000, developerPayload: user))
        return token
    }

    func enqueueOneStore(_ orderId: String, purchaseId: String, user: String = "u-1", product: String? = nil,
                         file: StaticString = #filePath, line: UInt = #line) throws {
        let proof = JSONValue.object([("productId", .string(product ?? gems)), ("purchaseToken", .string(token(purchaseId))),
                                      ("purchaseId", .string(purchaseId))])
        let path = try world.write("proof-\(orderId).json", proof.serialized(), mode: 0o600)
        try settle(expecting: 0, ["enqueue", "--store", "one_store", "--order", orderId, "--user", user, "--product", product ?? gems,
                                  "--proof-file", path], file: file, line: line)
    }

    func log(_ daemon: SettleBinary.Running) -> String { (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? "" }

    func startDaemon(file: StaticString = #filePath, line: UInt = #line) throws -> (SettleBinary.Running, Int) {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(daemon)
        var port: Int?
        _ = eventually(within: 20) {
            port = log(daemon).split(separator: "\n").first { $0.contains("notifications.listening") }?
                .split(separator: " ").first { $0.hasPrefix("port=") }.flatMap { Int($0.dropFirst(5)) }
            return port != nil && log(daemon).contains("pass.finished")
        }
        guard let port else {
            XCTFail("settle run never listened: \(log(daemon))", file: file, line: line)
            throw CocoaError(.fileReadUnknown)
        }
        return (daemon, port)
    }

    func post(_ port: Int, _ path: String, _ body: Data) throws -> Int {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        return try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)\(path)",
                                           headers: [HTTPHeader("Content-Type", "application/json")], body: body)).status
    }
}
