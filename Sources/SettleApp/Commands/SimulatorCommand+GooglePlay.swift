import Foundation
import SettleBase
import SettleConfig
import SettleGooglePlay
import SettleGooglePlaySimulator

/// `settle simulator`'s Google Play: the fake Google (token endpoint, purchases, acknowledge,
/// consume, voided purchases) on a loopback port of its own, plus two helpers for testing
/// real-time developer notifications: the key set pushes are signed with, published as Google
/// publishes its own (`/oauth2/v3/certs`, for `google_play.push.jwks_url`) and at
/// `GET /simulator/jwks` (to save as `google_play.push.jwks_file`), and `POST /simulator/push-token` with
/// `{"audience": ..., "email": ...}` (a signed OIDC token to send as `Authorization: Bearer`).
struct SimulatedGooglePlay {
    static let pushKeyId = "simulator-push-key"
    let fake: FakeGooglePlay
    let server: LoopbackHTTPServer
    let source: String

    /// Serves Google for the configuration's `google_play` section (accepting its service
    /// account key), or for a throwaway key written to `keyPath` when there is none. Nil when
    /// neither is there: Google is then not simulated.
    static func start(configuration: Configuration?, keyPath: String?) throws -> SimulatedGooglePlay? {
        let key: ServiceAccountKey
        let packageName: String
        let source: String
        if let play = configuration?.googlePlay {
            key = try play.loadServiceAccountKey()
            packageName = play.packageName
            source = "the service account key in \(play.serviceAccountFile.path)"
        } else if let keyPath {
            let document = ServiceAccountKey.document(clientEmail: "settle-simulator@example-project.iam.gserviceaccount.com",
                                                      privateKeyId: "simulator-key", privateKeyPEM: try RSAPrivateKey.generatePEM(),
                                                      tokenURI: "https://oauth2.googleapis.com/token")
            guard FileManager.default.createFile(atPath: keyPath, contents: document.data, attributes: [.posixPermissions: 0o600]) else {
                throw CommandFailure(.ioError, "cannot write the simulator's service account key to \(keyPath)")
            }
            key = try ServiceAccountKey(json: document.data)
            packageName = SimulatorCommand.defaultBundleId
            source = "the throwaway service account key written to \(keyPath)"
        } else {
            return nil
        }
        let pushKey = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        let fake = FakeGooglePlay(packageName: packageName, serviceAccount: key, pushKey: pushKey, pushKeyId: pushKeyId,
                                  time: SystemTimeSource())
        let jwks = JSONWebKeySet.document([(id: pushKeyId, key: pushKey.publicKey)]).data
        let server = try LoopbackHTTPServer { request in
            switch (request.method, String(request.pathWithoutQuery)) {
            case ("GET", "/simulator/jwks"):
                return .json(200, jwks)
            case ("POST", "/simulator/push-token"):
                guard let body = try? JSONValue.parse(request.body), let audience = body["audience"]?.looseString,
                      let email = body["email"]?.looseString,
                      let token = try? fake.pushToken(audience: audience, email: email) else {
                    return .json(400, JSONValue.object([("error", .string("POST {\"audience\": ..., \"email\": ...}"))]).data)
                }
                return .json(200, JSONValue.object([("token", .string(token))]).data)
            default:
                return fake.handle(request)
            }
        }
        fake.expectTokenURL(server.baseURL + "/token")
        return SimulatedGooglePlay(fake: fake, server: server, source: source)
    }

    var lines: String {
        """
        google_play.api_url: \(server.baseURL)
        google_play.token_url: \(server.baseURL)/token
        google_play.package_name: \(fake.packageName), accepting \(source)
        google_play.push.jwks_url: \(server.baseURL)\(FakeGooglePlay.certsPath)
        google_play push keys: GET \(server.baseURL)/simulator/jwks; a push token: POST \(server.baseURL)/simulator/push-token {"audience", "email"}
        """
    }
}
