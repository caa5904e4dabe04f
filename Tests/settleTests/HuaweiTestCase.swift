import Foundation
import Synchronization
import XCTest
import SettleApp
import SettleBase
import SettleTesting
import SettleHuawei
import SettleHuaweiSimulator
#if canImport(Glibc)
import Glibc
#endif

/// End-to-end tests of Huawei AppGallery orders: the built `settle` against the fake IAP Kit
/// (`FakeHuawei`) on a loopback server of this test process, signing with the simulator's test
/// chain, with the world's hook scripts.
class HuaweiTestCase: EndToEndTestCase {
    static let appId = "10000001"
    /// Generated once per run with OpenSSL, never committed.
    static let iapKeyPEM: String = try! ES256PrivateKey.generatePEM()

    let coins = "hw_coins_500"
    let unlock = "hw_unlock"
    let vip = "hw_vip_monthly"

    nonisolated(unsafe) var fake: FakeHuawei!
    nonisolated(unsafe) var hms: FakeHMS!
    nonisolated(unsafe) var huawei: LoopbackHTTPServer!
    /// The app's RSA IAP key for HMS, generated once per run; its public half is configured.
    static let hmsKey: RSAPrivateKey = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
    static let hmsSecret = "hms-client-secret-SECRETHMSSECRET"

    /// What the test does to shipped confirms before the fake sees them.
    final class Tap: Sendable {
        /// Each confirm's purchase order and how many grants the hook had made when Huawei was told.
        let confirms = Mutex<[(orderId: String, deliveriesSoFar: Int)]>([])
        /// How many confirms still get a 503 before the fake sees them.
        let failConfirms = Mutex(0)
        /// Set: the next confirm kills the settle process whose pid the hook wrote.
        let killAtConfirm = Mutex(false)
    }
    let tap = Tap()

    override func setUpWithError() throws {
        try super.setUpWithError()
        try world.write("huawei-iap.p8", Self.iapKeyPEM, mode: 0o600)
        try world.write("huawei-root.pem", HuaweiSimulatorChain.rootPEM)
        let fake = try FakeHuawei(appId: Self.appId, publicKey: try ES256PrivateKey(pem: Self.iapKeyPEM).publicKey, time: world.time)
        self.fake = fake
        let hms = FakeHMS(appId: Self.appId, clientSecret: Self.hmsSecret, key: Self.hmsKey, time: world.time)
        self.hms = hms
        try world.write("hms-secret", Self.hmsSecret, mode: 0o600)
        try world.write("hms-public-key.txt", Self.hmsKey.subjectPublicKeyInfo.base64EncodedString() + "\n")
        let (tap, deliveriesPath, pidPath) = (self.tap, world.deliveriesPath, world.folder + "/settle.pid")
        huawei = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/shipped/confirm") {
                let delivered = ((try? String(contentsOfFile: deliveriesPath, encoding: .utf8)) ?? "").split(separator: "\n").count
                let orderId = (try? JSONValue.parse(request.body))?["purchaseOrderId"]?.looseString ?? "?"
                tap.confirms.withLock { $0.append((orderId, delivered)) }
                if tap.killAtConfirm.withLock({ armed in defer { armed = false }; return armed }),
                   let text = try? String(contentsOfFile: pidPath, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    kill(pid, SIGKILL)
                    return HTTPServerResponse(status: 503)
                }
                if tap.failConfirms.withLock({ left in defer { left = max(0, left - 1) }; return left > 0 }) {
                    return HTTPServerResponse(status: 503)
                }
            }
            if let answer = hms.handle(request) { return answer }
            return fake.handle(request)
        }
        _ = try world.hook("grant.sh", exit: 0, extra: "echo $PPID > \"\(pidPath)\"")
        try writeHuaweiConfig()
    }

    nonisolated(unsafe) var daemons: [SettleBinary.Running] = []

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        huawei?.stop()
        huawei = nil
        fake = nil
        try super.tearDownWithError()
    }

    /// settle.json with Apple as before plus a huawei section pointing at the fake; the
    /// developerPayload is the user id (`user_binding.app_account_token: user_id`).
    func writeHuaweiConfig(hook: String? = nil, root: String = "huawei-root.pem", extra: [(String, JSONValue)] = []) throws {
        try world.writeConfig(hook: hook, overrides: [
            ("products", .object([
                (world.coins, .object([("type", .string("consumable")), ("grant", .object([("coins", .number(100))]))])),
                (coins, .object([("type", .string("consumable")), ("store", .string("huawei")),
                                 ("grant", .object([("coins", .number(500))]))])),
                (unlock, .object([("type", .string("non_consumable")), ("store", .string("huawei"))])),
                (vip, .object([("type", .string("auto_renewable")), ("store", .string("huawei"))])),
            ])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("huawei", .object([
                ("app_id", .string(Self.appId)), ("issuer_id", .string("issuer-1")), ("key_id", .string("key-1")),
                ("private_key_file", .string("huawei-iap.p8")), ("root_certificates", .array([.string(root)])),
                ("api_url", .string(huawei.baseURL)), ("hms", hmsSection),
            ])),
        ] + extra)
    }

    /// The `huawei.hms` section pointing at the fake HMS: the app's site under `/site-cn`, AppTouch's under `/apptouch`.
    var hmsSection: JSONValue {
        .object([("client_secret_file", .string("hms-secret")), ("public_key_file", .string("hms-public-key.txt")),
                 ("order_url", .string(huawei.baseURL + "/site-cn")), ("apptouch_order_url", .string(huawei.baseURL + "/apptouch")),
                 ("token_url", .string(huawei.baseURL + "/oauth2/v3/token")), ("subscription_url", .string(huawei.baseURL + "/sub-cn")),
                 ("apptouch_subscription_url", .string(huawei.baseURL + "/sub-at"))])
    }

    func log(_ daemon: SettleBinary.Running) -> String { (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? "" }

    /// Starts `settle run` and returns it with the port its notifications listener took, once its first pass ended.
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

    /// POSTs `body` to the listener's `path`.
    func post(_ port: Int, path: String, _ body: Data) throws -> (status: Int, text: String) {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        let answer = try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)\(path)",
                                                 headers: [HTTPHeader("Content-Type", "application/json;charset=UTF-8")], body: body))
        return (answer.status, String(decoding: answer.body, as: UTF8.self))
    }

    /// A distinctive token for `name`, so tests can prove it never leaks.
    func token(_ name: String) -> String { "hwtok-\(name)-SECRETHUAWEITOKEN.0123456789abcdef" }

    /// A purchase order as Huawei signs it: bought a minute ago by `user` (its developerPayload).
    @discardableResult
    func scriptOrder(_ id: String, product: String? = nil, type: String = "0", user: String? = "u-1", quantity: Int = 1,
                     extra: [(String, JSONValue)] = []) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("purchaseOrderId", .string(id)), ("purchaseToken", .string(token(id))), ("productId", .string(product ?? coins)),
            ("productType", .string(type)), ("purchaseTime", .number((world.time.unixSeconds - 60) * 1000)),
            ("quantity", .number(quantity)), ("finishStatus", .string("2")),
        ]
        if let user { members.append(("developerPayload", .string(user))) }
        let order = HuaweiScript.completed(FakeHuawei.setting(.object(members), extra), appId: Self.appId)
        if type != "2" { fake.script(order: order) }
        return order
    }

    /// `settle enqueue --store huawei` with the proof in a file (never on the command line).
    @discardableResult
    func enqueueHuawei(_ orderId: String, purchaseOrderId: String, token: String? = nil, user: String = "u-1", product: String? = nil,
                       file: StaticString = #filePath, line: UInt = #line) throws -> SettleBinary.Result {
        let proof = JSONValue.object([("purchaseOrderId", .string(purchaseOrderId)), ("purchaseToken", .string(token ?? self.token(purchaseOrderId)))])
        let path = try world.write("proof-\(orderId).json", proof.serialized(), mode: 0o600)
        return try settle(expecting: 0, ["enqueue", "--store", "huawei", "--order", orderId, "--user", user,
                                         "--product", product ?? coins, "--proof-file", path], file: file, line: line)
    }
}
