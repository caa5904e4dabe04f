import Foundation
import SettleBase
import SettleConfig
import SettleGooglePlay
import SettleSimulator

/// `settle simulator`'s Google Play: the fake Google (token endpoint, purchases, acknowledge,
/// consume, voided purchases) on a loopback port of its own, plus two helpers for testing
/// real-time developer notifications: the key set pushes are signed with, published as Google
/// publishes its own (`/oauth2/v3/certs`, for `google_play.push.jwks_url`) and at
/// `GET /simulator/jwks` (to save as `google_play.push.jwks_file`), and `POST /simulator/push-token` with
/// `{"audience": ..., "email": ...}` (a signed OIDC token to send as `Authorization: Bearer`).
package final class GooglePlaySimulator: StoreSimulator {
    static let pushKeyId = "simulator-push-key"

    package static let script: any StoreScript.Type = GooglePlayScript.self
    package static let options = [(name: "--google-key", value: "FILE")]

    package static let help = """
    Google Play: a fake Google on a port of its own (the OAuth token endpoint, purchases and
    subscriptions, acknowledge, consume, voided purchases, and signed push tokens and the key
    set for real-time notifications), when the configuration has a google_play section (its
    service account key is accepted), or when --google-key FILE is given (a throwaway service
    account key is written there, mode 600). It prints the google_play.api_url and token_url
    to configure. The plans file's "google_play" section scripts its purchases (docs/google-play.md).
    """

    let fake: FakeGooglePlay
    let server: LoopbackHTTPServer
    let source: String
    let script: GooglePlayScript

    private init(fake: FakeGooglePlay, server: LoopbackHTTPServer, source: String, script: GooglePlayScript) {
        self.fake = fake
        self.server = server
        self.source = source
        self.script = script
    }

    /// Serves Google for the configuration's `google_play` section (accepting its service
    /// account key), or for a throwaway key written to `--google-key`'s file when there is none.
    /// Nil when neither is there: Google is then not simulated.
    package static func start(_ setup: StoreSimulatorSetup) throws -> GooglePlaySimulator? {
        do {
            return try serve(setup)
        } catch let error as StoreSimulatorFailure {
            throw error
        } catch let error as ConfigError {
            throw error
        } catch {
            throw StoreSimulatorFailure.unavailable("cannot start the simulated Google Play: \(error)")
        }
    }

    private static func serve(_ setup: StoreSimulatorSetup) throws -> GooglePlaySimulator? {
        let key: ServiceAccountKey
        let packageName: String
        let source: String
        if let play = setup.configuration?.googlePlay {
            key = try play.loadServiceAccountKey()
            packageName = play.packageName
            source = "the service account key in \(play.serviceAccountFile.path)"
        } else if let keyPath = setup.options["--google-key"] {
            let document = ServiceAccountKey.document(clientEmail: "settle-simulator@example-project.iam.gserviceaccount.com",
                                                      privateKeyId: "simulator-key", privateKeyPEM: try RSAPrivateKey.generatePEM(),
                                                      tokenURI: "https://oauth2.googleapis.com/token")
            guard FileManager.default.createFile(atPath: keyPath, contents: document.data, attributes: [.posixPermissions: 0o600]) else {
                throw StoreSimulatorFailure.io("cannot write the simulator's service account key to \(keyPath)")
            }
            key = try ServiceAccountKey(json: document.data)
            packageName = StoreSimulatorSetup.defaultBundleId
            source = "the throwaway service account key written to \(keyPath)"
        } else {
            return nil
        }
        let pushKey = try RSAPrivateKey(pem: RSAPrivateKey.generatePEM())
        let fake = FakeGooglePlay(packageName: packageName, serviceAccount: key, pushKey: pushKey, pushKeyId: pushKeyId,
                                  time: SystemTimeSource())
        let jwks = JSONWebKeySet.document([(id: pushKeyId, key: pushKey.publicKey)]).data
        let faults = setup.faults
        faults.register("google_play")
        let server = try LoopbackHTTPServer(port: setup.port) { request in
            if let fault = faults.front(request, store: "google_play", rateLimited: Self.rateLimited) { return fault }
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
        let script = setup.script.googlePlay
        script.apply(to: fake)
        return GooglePlaySimulator(fake: fake, server: server, source: source, script: script)
    }

    /// Google's 429 (RESOURCE_EXHAUSTED) with the Retry-After a switched-on fault names.
    @Sendable static func rateLimited(_ seconds: Double) -> HTTPServerResponse {
        var response = SimulatedRateLimit.googleRefusal(.limited(retryAfter: seconds), group: "simulated fault")
            ?? HTTPServerResponse(status: 429)
        response.headers.append(HTTPHeader("Retry-After", String(Int(seconds.rounded(.up)))))
        return response
    }

    package var baseURL: String { server.baseURL }

    package var banner: String {
        let scripted = [Plural.count(script.products.count, "Play purchase"),
                        Plural.count(script.subscriptions.count, "Play subscription"), "\(script.voided.count) voided"]
        return """
        google_play.api_url: \(server.baseURL)
        google_play.token_url: \(server.baseURL)/token
        google_play.package_name: \(fake.packageName), accepting \(source)
        google_play.push.jwks_url: \(server.baseURL)\(FakeGooglePlay.certsPath)
        google_play push keys: GET \(server.baseURL)/simulator/jwks; a push token: POST \(server.baseURL)/simulator/push-token {"audience", "email"}
        scripted: \(scripted.joined(separator: ", "))
        """
    }

    /// The Play Developer API's requests and the token endpoint's.
    package var requestCount: Int { fake.calls.count + fake.tokenRequests }

    package func stop() { server.stop() }
}
