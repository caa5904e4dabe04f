import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleOneStore
import SettleLedger
import SettleEngine

/// ONE store as a module: its descriptor, its `one_store` section, and the adapter that section
/// describes (purchase details, acknowledge or consume after every grant, PNS, the re-reads).
package enum OneStoreModule: StoreModule {
    package static var descriptor: StoreDescriptor {
        var descriptor = StoreDescriptor.oneStore
        descriptor.reasons = [
            "refunded": StoreReasonWords("ONE store cancelled the purchase (refunded)"),
            "purchase_not_found": StoreReasonWords(
                "ONE store knows no such purchase under this product",
                retryAdvice: "check the productId, token and purchaseId the app sent"),
        ]
        return descriptor
    }

    package static var configurationSections: [ConfigurationSection] { [.oneStore] }
    package static var migrations: [LedgerMigration] { [OneStoreMigrations.notifications] }
    package static var sideQueues: [SideQueue] { [OneStoreNotificationRecord.queue] }
    /// An order is verified by the purchase details call.
    package static var verificationRateGroups: Set<String> { [OneStoreRateGroups.purchases] }

    package static func configuredRates(_ configuration: Configuration) -> [String: Double] {
        configuration.oneStore?.rateLimits ?? [:]
    }

    /// `settle enqueue --store one_store --proof-file F`: the file holds what the app's SDK gave it.
    package static var proofFormat: ProofFormat? {
        ProofFormat(what: "a ONE store purchase (JSON: {\"productId\", \"purchaseToken\", \"purchaseId\"})") { text in
            guard let json = try? JSONValue.parse(text) else {
                return .failure(
                    ProofError(
                        "a ONE store proof is a JSON object with productId, purchaseToken and purchaseId; the file is not JSON"
                    ))
            }
            do throws(ProofFormatError) {
                return .success(try OneStoreProof(json: json).storeProof)
            } catch {
                return .failure(ProofError(error.message))
            }
        }
    }

    package static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)? {
        guard let settings = context.configuration.oneStore else { return nil }
        let metrics = context.metrics
        let client = try OneStoreClient(settings, http: context.client, time: context.ledger.time, pacer: context.pacer)
        { call, outcome in
            metrics?.observeStoreRequest(store: Store.oneStore.rawValue, call: call, outcome: outcome)
        }
        let products = context.configuration.products.filter { $0.value.stores.contains(.oneStore) }
        let verifier = OneStoreVerifier(
            client: client, products: products, acceptSandbox: context.configuration.acceptSandbox,
            binding: context.configuration.userBinding)
        var adapter = OneStoreAdapter(verifier: verifier)
        adapter.rereads = OneStoreRereads(
            ledger: context.ledger, verifier: verifier, intervalSeconds: settings.rereadIntervalSeconds,
            log: context.log)
        if let path = settings.notificationsPath {
            adapter.inbox = (
                path,
                OneStorePNSInbox(
                    ledger: context.ledger, verifier: verifier, licenseKey: try settings.loadLicenseKey(),
                    binding: context.configuration.userBinding, log: context.log)
            )
        }
        return adapter
    }

    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {
        guard let settings = configuration.oneStore else { return }
        _ = try settings.clientSecretFile.read()
        _ = try settings.loadLicenseKey()
    }

    package static func describe(_ configuration: Configuration) -> [String] {
        guard let s = configuration.oneStore else { return [] }
        return [
            "one_store: client \(s.clientId), package \(s.packageName), market \(s.marketCode.rawValue), client secret "
                + "\(s.clientSecretFile.path) (contents redacted), license key \(s.licenseKeyFile), api \(ConfigurationText.url(s.apiURL)), "
                + "sandbox \(ConfigurationText.url(s.sandboxURL)), purchase times read \(s.purchaseTimeOffsetHours) h early",
            "one_store.rate_limits: " + ConfigurationText.rates(descriptor.publishedRates, s.rateLimits)
                + " (requests a second)",
        ]
    }
}

/// ONE store: purchase details, acknowledge or consume after every delivery, PNS before the
/// claims, and the re-reads of recent purchases after the pass.
package struct OneStoreAdapter: StoreAdapter {
    package var store: Store { .oneStore }
    package let verifier: OneStoreVerifier
    package var inbox: (path: String, inbox: OneStorePNSInbox)?
    package var rereads: OneStoreRereads?

    package init(verifier: OneStoreVerifier) { self.verifier = verifier }

    package func verify(_ order: Order) throws -> Verification { verifier.verify(order) }
    package var finisher: (any StoreFinisher)? { OneStoreFinisher(verifier: verifier) }

    package func beforeClaims(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        try inbox?.inbox.processPending(work) ?? .idle
    }

    package func afterPass(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        try rereads?.rereadIfDue(work) ?? .idle
    }

    package var listenerRoutes: [String: ListenerRoute] {
        guard let inbox else { return [:] }
        return [inbox.path: { request in inbox.inbox.answer(request) }]
    }
}
