import Foundation
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleGooglePlay
@testable import SettleGooglePlaySimulator

/// Keys generated once per test run with OpenSSL (never committed): the service account's and
/// the fake Google's push signer, plus a stranger's for forgeries.
enum PlayTestKeys {
    static let serviceAccountPEM: String = try! RSAPrivateKey.generatePEM()
    static let push: RSAPrivateKey = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
    static let stranger: RSAPrivateKey = try! RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
}

/// A fake Google on a real loopback server, and settle's Play client pointed at it over libcurl.
final class PlayTestWorld {
    static let packageName = "com.example.game"
    static let email = "settle@example-project.iam.gserviceaccount.com"
    static let pushEmail = "rtdn-push@example-project.iam.gserviceaccount.com"
    static let audience = "https://settle.example.com/google-play/notifications"

    let time = ManualTimeSource(Date(timeIntervalSince1970: 1_796_000_000))
    let key: ServiceAccountKey
    let fake: FakeGooglePlay
    let server: LoopbackHTTPServer
    let tokens: GoogleAccessTokenSource
    let client: PlayDeveloperClient

    init() throws {
        let keyFile = ServiceAccountKey.document(clientEmail: Self.email, privateKeyId: "key-1", privateKeyPEM: PlayTestKeys.serviceAccountPEM,
                                                 tokenURI: "https://oauth2.googleapis.com/token")
        key = try ServiceAccountKey(json: keyFile.data)
        let fake = FakeGooglePlay(packageName: Self.packageName, serviceAccount: key, pushKey: PlayTestKeys.push, time: time)
        self.fake = fake
        server = try LoopbackHTTPServer { request in fake.handle(request) }
        fake.expectTokenURL(server.baseURL + "/token")
        let http = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 10))
        tokens = GoogleAccessTokenSource(key: key, tokenURL: server.baseURL + "/token", client: http, time: time)
        client = PlayDeveloperClient(packageName: Self.packageName, baseURL: server.baseURL, tokens: tokens, client: http)
    }

    deinit { server.stop() }

    var pushAuthenticator: PushAuthenticator {
        PushAuthenticator(keys: fake.pushKeySet, audience: Self.audience, serviceAccountEmail: Self.pushEmail, time: time)
    }

    static func token(_ text: String) -> PurchaseToken { PurchaseToken(text)! }

    /// A realistic token: long, with the dots and dashes Google's have.
    static let tokenText = "opaque-token-up.AO-J1OxYz_abcdefghijklmnopqrstuvwxyz0123456789-ABCDEFGHIJ"
}
