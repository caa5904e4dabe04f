import Foundation
import SettleBase
import SettleConfig
import SettleAppStore
import SettleSimulator

/// `settle simulator`'s App Store: the local Apple (`AppleSimulator`) on the port `--listen`
/// names, taking the shared secret and the Server API key from the configuration, as settle
/// will send them, or the simulator's defaults.
package final class AppStoreSimulator: StoreSimulator {
    /// The shared secret the bare `settle simulator` accepts: a test value, printed and documented.
    package static let defaultSharedSecret = "simulator-shared-secret"

    package static let script: any StoreScript.Type = AppStoreScript.self
    package static let options = [(name: "--write-root", value: "FILE")]

    package static let help = """
    Apple: verifyReceipt (/production/verifyReceipt, /sandbox/verifyReceipt) and the App Store
    Server API (Get Transaction Info, Get Transaction History, Look Up Order ID) under
    /production and /sandbox. It takes the shared secret and the Server API key from the
    configuration, as settle will send them, and signs with a test chain whose root
    --write-root saves: point a test configuration's URLs and roots at it, never a production
    one. Listens on 127.0.0.1 only; port 0 (the default) picks a free one (the URL is printed
    first).

    Without --config or $SETTLE_CONFIG it never reads /etc/settle/settle.json (a production
    configuration's secrets are not for a simulator) and starts with defaults: bundle id
    \(StoreSimulatorSetup.defaultBundleId), the shared secret "\(defaultSharedSecret)", and no Server API key, so
    Server API requests are refused (401) until --config names a server_api section. It prints
    which secrets it accepts.
    """

    let simulator: AppleSimulator
    let script: AppStoreScript
    /// Which configuration and secrets it accepts, in words.
    let accepts: String

    private init(simulator: AppleSimulator, script: AppStoreScript, accepts: String) {
        self.simulator = simulator
        self.script = script
        self.accepts = accepts
    }

    package static func start(_ setup: StoreSimulatorSetup) throws -> AppStoreSimulator? {
        let bundleId = setup.bundleId
        let secret: String
        var credentials: ServerAPICredentials?
        let accepts: String
        if let configuration = setup.configuration {
            secret = try configuration.receiptAPI?.sharedSecretFile.read().value ?? ""
            if let api = configuration.serverAPI {
                credentials = ServerAPICredentials(issuerId: api.issuerId, keyId: api.keyId, bundleId: configuration.bundleId,
                                                   publicKey: try api.loadPrivateKey().publicKey)
            }
            let receipts = configuration.receiptAPI.map { "the shared secret in \($0.sharedSecretFile.path) (verifyReceipt)" }
                ?? "no shared secret (no receipt_api), so verifyReceipt answers 21004"
            let server = configuration.serverAPI.map { "Server API tokens signed by key \($0.keyId) of issuer \($0.issuerId)" }
                ?? "no Server API key (no server_api), so Server API requests are refused"
            accepts = "configuration: \(setup.configurationPath ?? "")\nbundle_id: \(bundleId)\naccepts: \(receipts); \(server)"
        } else {
            secret = defaultSharedSecret
            accepts = """
                no configuration (--config or $SETTLE_CONFIG): the defaults
                bundle_id: \(bundleId)
                accepts: the shared secret "\(secret)" (verifyReceipt); no Server API key, so Server API requests are refused (give --config with server_api)
                """
        }
        if let path = setup.options["--write-root"] {
            guard FileManager.default.createFile(atPath: path, contents: Data(SimulatorSigningChain.rootPEM.utf8)) else {
                throw StoreSimulatorFailure.io("cannot write the simulator's root certificate to \(path)")
            }
        }
        let simulator: AppleSimulator
        do {
            let faults = setup.faults
            faults.register("app_store")
            let limited: @Sendable (Double) -> HTTPServerResponse = {
                SimulatedRateLimit.appleRateLimited(retryAfter: $0, now: Date())
            }
            simulator = try AppleSimulator(sharedSecret: secret, credentials: credentials, port: setup.port) {
                faults.front($0, store: "app_store", rateLimited: limited)
            }
        } catch {
            throw StoreSimulatorFailure.unavailable("cannot listen on 127.0.0.1:\(setup.port): \(error)")
        }
        let script = setup.script.part(AppStoreScript.self)
        script.apply(to: simulator)
        return AppStoreSimulator(simulator: simulator, script: script, accepts: accepts)
    }

    package var baseURL: String { simulator.baseURL }

    package var banner: String {
        let base = simulator.baseURL
        let scripted = [Plural.count(script.receipts.count, "receipt"),
                        Plural.count(script.transactions.count, "transaction"),
                        Plural.count(script.customers.count, "customer"),
                        Plural.count(script.appleOrders.count, "Apple order")]
        return """
            receipt_api.production_url: \(base)/production/verifyReceipt
            receipt_api.sandbox_url: \(base)/sandbox/verifyReceipt
            server_api.production_url: \(base)/production
            server_api.sandbox_url: \(base)/sandbox
            scripted: \(scripted.joined(separator: ", "))
            \(accepts)
            """
    }

    /// verifyReceipt's and Get Transaction Info's requests.
    package var requestCount: Int { simulator.requests.count + simulator.serverRequests.count }

    package func stop() { simulator.stop() }
}
