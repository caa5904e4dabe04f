import Foundation
import SettleApp
import SettleTesting
import Synchronization
import XCTest
import SettleBase
#if canImport(Glibc)
import Glibc
import SettleGooglePlay
import SettleGooglePlaySimulator
#endif

/// End-to-end tests of Google Play orders: the built `settle` against a fake Google
/// (`FakeGooglePlay`) on a loopback server of this test process, with the world's hook scripts.
class GooglePlayTestCase: EndToEndTestCase {
    static let packageName = "com.example.game"
    static let serviceAccountEmail = "settle@example-project.iam.gserviceaccount.com"
    static let pushEmail = "rtdn-push@example-project.iam.gserviceaccount.com"
    static let audience = "https://settle.example.com/google-play/notifications"
    /// Generated once per run with OpenSSL, never committed.
    static let serviceAccountPEM: String = try! RSAPrivateKey.generatePEM()
    static let pushKey: RSAPrivateKey = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
    static let strangerKey: RSAPrivateKey = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())

    let gems = "gems_100"
    let unlock = "premium_unlock"
    let pro = "pro_monthly"

    nonisolated(unsafe) var fake: FakeGooglePlay!
    nonisolated(unsafe) var google: LoopbackHTTPServer!
    /// What the test does to acknowledge/consume requests before the fake sees them.
    final class Tap: Sendable {
        let finishCalls = Mutex<[FinishCall]>([])
        /// Set: the next acknowledge or consume kills the settle process whose pid the hook wrote.
        let killAtFinish = Mutex(false)
        /// How many acknowledge or consume requests still get a 503 before the fake sees them.
        let failFinishes = Mutex(0)
        /// How many acknowledge or consume requests still get a 400 (Google refusing) before the fake sees them.
        let refuseFinishes = Mutex(0)
        /// The status the refused acknowledge or consume requests get (Google's 4xx or 5xx).
        let refuseStatus = Mutex(400)
    }
    let tap = Tap()

    struct FinishCall: Sendable {
        var path: String
        /// Whether the delivery hook had run (for any order) when Google was told.
        var deliveriesSoFar: Int
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        let document = ServiceAccountKey.document(clientEmail: Self.serviceAccountEmail, privateKeyId: "key-1",
                                                  privateKeyPEM: Self.serviceAccountPEM, tokenURI: "https://oauth2.googleapis.com/token")
        try world.write("play-service-account.json", document.serialized(pretty: true), mode: 0o600)
        let fake = FakeGooglePlay(packageName: Self.packageName, serviceAccount: try ServiceAccountKey(json: document.data),
                                  pushKey: Self.pushKey, time: world.time)
        self.fake = fake
        let deliveriesPath = world.deliveriesPath
        let pidPath = world.folder + "/settle.pid"
        let tap = self.tap
        google = try LoopbackHTTPServer { request in
            if request.path.hasSuffix(":acknowledge") || request.path.hasSuffix(":consume") {
                let delivered = ((try? String(contentsOfFile: deliveriesPath, encoding: .utf8)) ?? "").split(separator: "\n").count
                tap.finishCalls.withLock { $0.append(FinishCall(path: request.path, deliveriesSoFar: delivered)) }
                if tap.killAtFinish.withLock({ armed in defer { armed = false }; return armed }),
                   let text = try? String(contentsOfFile: pidPath, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    // The settle process dies waiting for Google's answer: after the hook, before Google heard.
                    kill(pid, SIGKILL)
                    return HTTPServerResponse(status: 503)
                }
                if tap.failFinishes.withLock({ left in defer { left = max(0, left - 1) }; return left > 0 }) {
                    return HTTPServerResponse(status: 503)
                }
                if tap.refuseFinishes.withLock({ left in defer { left = max(0, left - 1) }; return left > 0 }) {
                    let status = tap.refuseStatus.withLock { $0 }
                    return .json(status, Data(#"{"error": {"code": \#(status), "message": "The product is not owned by the user."}}"#.utf8))
                }
            }
            return fake.handle(request)
        }
        fake.expectTokenURL(google.baseURL + "/token")
        _ = try world.hook("grant.sh", exit: 0, extra: "echo $PPID > \"\(pidPath)\"")
        try writePlayConfig()
    }

    override func tearDownWithError() throws {
        google?.stop()
        google = nil
        fake = nil
        try super.tearDownWithError()
    }

    /// settle.json with Apple as before plus a google_play section pointing at the fake, and
    /// Play products; the obfuscated account id is the user id (`user_binding.app_account_token: user_id`).
    func writePlayConfig(acceptSandbox: Bool = true, hook: String? = nil, extra: [(String, JSONValue)] = []) throws {
        try world.writeConfig(hook: hook, acceptSandbox: acceptSandbox, overrides: [
            ("products", .object([
                (world.coins, .object([("type", .string("consumable")), ("grant", .object([("coins", .number(100))]))])),
                (world.premium, .object([("type", .string("non_consumable"))])),
                (gems, .object([("type", .string("consumable")), ("store", .string("google_play")),
                                ("grant", .object([("gems", .number(100))]))])),
                (unlock, .object([("type", .string("non_consumable")), ("store", .string("google_play"))])),
                (pro, .object([("type", .string("auto_renewable")), ("store", .string("both"))])),
            ])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
            ("google_play", .object([
                ("package_name", .string(Self.packageName)),
                ("service_account_file", .string("play-service-account.json")),
                ("api_url", .string(google.baseURL)),
                ("token_url", .string(google.baseURL + "/token")),
            ])),
        ] + extra)
    }

    // MARK: - Purchases

    /// A distinctive token for `name`, long like Google's, so tests can prove it never leaks.
    func token(_ name: String) -> String { "tok-\(name)-AO-J1OxYz.SECRETPLAYTOKEN_abcdefghijklmnopqrstuvwxyz0123456789" }

    /// One-time product purchase as Google answers it (purchased, not acknowledged, bought now).
    @discardableResult
    func scriptProduct(_ name: String, product: String? = nil, orderId: String? = nil, state: Int = 0, account: String? = "u-1",
                       test: Bool = false, acknowledged: Bool = false, boughtAgo: Int64 = 60) -> String {
        let token = token(name)
        fake.script(product: token, ProductPurchase(
            rawPurchaseState: state, rawConsumptionState: 0, rawAcknowledgementState: acknowledged ? 1 : 0,
            rawPurchaseType: test ? 0 : nil, orderId: orderId ?? "GPA.\(name)-0001", productId: product ?? gems,
            purchaseTimeMillis: (world.time.unixSeconds - boughtAgo) * 1000, obfuscatedExternalAccountId: account))
        return token
    }

    /// `settle enqueue --store google_play` with the token in a file (never on the command line).
    @discardableResult
    func enqueuePlay(_ orderId: String, token: String, user: String = "u-1", product: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws -> SettleBinary.Result {
        let path = try world.write("token-\(orderId)", token + "\n", mode: 0o600)
        return try settle(expecting: 0, ["enqueue", "--store", "google_play", "--order", orderId, "--user", user,
                                         "--product", product ?? gems, "--purchase-token-file", path], file: file, line: line)
    }

    /// The hook's JSON payload for an order.
    func payload(_ orderId: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/payload-\(orderId).json")))
    }

    var finishes: [FinishCall] { tap.finishCalls.withLock { $0 } }

    /// Every line settle printed so far, joined: for proving a token never appeared.
    var everything: String { transcript.joined(separator: "\n") }
}
