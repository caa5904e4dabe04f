import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleSimulator
import SettleAppStoreSimulator
import SettleGooglePlaySimulator

/// `settle simulator`: the local Apple and the fake Google Play of the tests and the demo,
/// standalone, so integrators can run their hook and backend against scripted store answers
/// without an Apple or Google account.
enum SimulatorCommand {
    static let spec = ArgumentSpec(command: "simulator", options: [
        .init(name: "--listen", takesValue: true), .init(name: "--script", takesValue: true),
        .init(name: "--write-root", takesValue: true), .init(name: "--google-key", takesValue: true),
    ])

    static let help = """
    Usage: settle simulator [--listen 127.0.0.1:PORT] [--script PLANS.json] [--write-root FILE]
                            [--google-key FILE] [--config PATH]

    Runs local stand-ins for the stores on loopback until SIGINT or SIGTERM, answering as the
    plans file scripts (docs/testing.md; /usr/share/doc/settle/docs/testing.md when installed).

    Apple: verifyReceipt (/production/verifyReceipt, /sandbox/verifyReceipt) and the App Store
    Server API (Get Transaction Info, Get Transaction History, Look Up Order ID) under
    /production and /sandbox. It takes the shared secret and the Server API key from the
    configuration, as settle will send them, and signs with a test chain whose root
    --write-root saves: point a test configuration's URLs and roots at it, never a production
    one. Listens on 127.0.0.1 only; port 0 (the default) picks a free one (the URL is printed
    first).

    Without --config or $SETTLE_CONFIG it never reads /etc/settle/settle.json (a production
    configuration's secrets are not for a simulator) and starts with defaults: bundle id
    \(defaultBundleId), the shared secret "\(defaultSharedSecret)", and no Server API key, so
    Server API requests are refused (401) until --config names a server_api section. It prints
    which secrets it accepts.

    Google Play: a fake Google on a port of its own (the OAuth token endpoint, purchases and
    subscriptions, acknowledge, consume, voided purchases, and signed push tokens and the key
    set for real-time notifications), when the configuration has a google_play section (its
    service account key is accepted), or when --google-key FILE is given (a throwaway service
    account key is written there, mode 600). It prints the google_play.api_url and token_url
    to configure. The plans file's "google_play" section scripts its purchases (docs/google-play.md).
    """

    /// What the bare `settle simulator` starts with: the documented example configuration's bundle id,
    /// and a shared secret that is a test value, printed and documented.
    static let defaultBundleId = "com.example.game"
    static let defaultSharedSecret = "simulator-shared-secret"

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let port = try listenPort(parsed.value("--listen") ?? "127.0.0.1:0")
        let bundleId: String
        let secret: String
        var credentials: ServerAPICredentials?
        var configuration: Configuration?
        let accepts: String
        if parsed.value("--config") == nil && context.environment["SETTLE_CONFIG"] == nil {
            bundleId = defaultBundleId
            secret = defaultSharedSecret
            accepts = """
                no configuration (--config or $SETTLE_CONFIG): the defaults
                bundle_id: \(bundleId)
                accepts: the shared secret "\(secret)" (verifyReceipt); no Server API key, so Server API requests are refused (give --config with server_api)
                """
        } else {
            let loaded = try context.loadConfiguration(parsed)
            configuration = loaded
            let configuration = loaded
            bundleId = configuration.bundleId
            do {
                secret = try configuration.receiptAPI?.sharedSecretFile.read().value ?? ""
                if let api = configuration.serverAPI {
                    credentials = ServerAPICredentials(issuerId: api.issuerId, keyId: api.keyId, bundleId: configuration.bundleId,
                                                       publicKey: try api.loadPrivateKey().publicKey)
                }
            } catch {
                throw CommandFailure.from(error)
            }
            let receipts = configuration.receiptAPI.map { "the shared secret in \($0.sharedSecretFile.path) (verifyReceipt)" }
                ?? "no shared secret (no receipt_api), so verifyReceipt answers 21004"
            let server = configuration.serverAPI.map { "Server API tokens signed by key \($0.keyId) of issuer \($0.issuerId)" }
                ?? "no Server API key (no server_api), so Server API requests are refused"
            accepts = "configuration: \(context.configPath(parsed))\nbundle_id: \(bundleId)\naccepts: \(receipts); \(server)"
        }
        var script = SimulatorScript(bundleId: bundleId)
        if let path = parsed.value("--script") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandFailure(.dataError, "cannot read the script \(path)")
            }
            do {
                script = try SimulatorScript(json: try JSONValue.parse(data), bundleId: bundleId,
                                             parts: [AppStoreScript.self, GooglePlayScript.self])
            } catch {
                throw CommandFailure(.dataError, "script \(path): \(error)")
            }
        }
        if let path = parsed.value("--write-root") {
            guard FileManager.default.createFile(atPath: path, contents: Data(SimulatorSigningChain.rootPEM.utf8)) else {
                throw CommandFailure(.ioError, "cannot write the simulator's root certificate to \(path)")
            }
        }
        let simulator: AppleSimulator
        do {
            simulator = try AppleSimulator(sharedSecret: secret, credentials: credentials, port: port)
        } catch {
            throw CommandFailure(.unavailable, "cannot listen on 127.0.0.1:\(port): \(error)")
        }
        script.apply(to: simulator)
        let google: SimulatedGooglePlay?
        do {
            google = try SimulatedGooglePlay.start(configuration: configuration, keyPath: parsed.value("--google-key"))
        } catch let error as CommandFailure {
            throw error
        } catch let error as ConfigError {
            throw CommandFailure.from(error)
        } catch {
            throw CommandFailure(.unavailable, "cannot start the simulated Google Play: \(error)")
        }
        google.map { script.googlePlay.apply(to: $0.fake) }
        defer { google?.server.stop() }
        let base = simulator.baseURL
        let apple = script.part(AppStoreScript.self)
        context.print("""
            settle simulator listening on \(base)
            receipt_api.production_url: \(base)/production/verifyReceipt
            receipt_api.sandbox_url: \(base)/sandbox/verifyReceipt
            server_api.production_url: \(base)/production
            server_api.sandbox_url: \(base)/sandbox
            scripted: \(apple.receipts.count) receipts, \(apple.transactions.count) transactions, \(apple.customers.count) customers, \(apple.appleOrders.count) Apple orders
            \(accepts)
            """)
        if let google {
            context.print(google.lines + "\nscripted: \(script.googlePlay.products.count) Play purchases, \(script.googlePlay.subscriptions.count) Play subscriptions, \(script.googlePlay.voided.count) voided")
        }
        StopSignal.wait()
        simulator.stop()
        context.print("settle simulator stopped after \(simulator.requests.count + simulator.serverRequests.count) requests")
    }

    /// `127.0.0.1:PORT` or `localhost:PORT`: the simulator never listens beyond this machine.
    static func listenPort(_ text: String) throws(UsageError) -> UInt16 {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, ["127.0.0.1", "localhost"].contains(String(parts[0])), let port = UInt16(parts[1]) else {
            throw UsageError(command: "simulator", message: "--listen takes 127.0.0.1:PORT (loopback only), got '\(text)'")
        }
        return port
    }
}
