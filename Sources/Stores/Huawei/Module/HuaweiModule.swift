import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleHuawei
import SettleLedger
import SettleEngine

/// Huawei AppGallery (HarmonyOS IAP Kit) as a module: its descriptor, its `huawei` section, and
/// the adapter that section describes (order and subscription status queries verified against the
/// pinned Huawei root, shipped confirm after every grant).
package enum HuaweiModule: StoreModule {
    package static var descriptor: StoreDescriptor {
        var descriptor = StoreDescriptor.huawei
        descriptor.reasons = HuaweiReasons.words
        return descriptor
    }

    package static var configurationSections: [ConfigurationSection] { [.huawei] }
    package static var migrations: [LedgerMigration] { [HuaweiMigrations.notifications] }
    /// Its stored notifications, which rescue visits after the core's queues.
    package static var sideQueues: [SideQueue] { [HuaweiNotificationRecord.queue] }

    /// An order is verified by the order or the subscription status query.
    package static var verificationRateGroups: Set<String> { [HuaweiRateGroups.orders, HuaweiRateGroups.subscriptions] }

    package static func configuredRates(_ configuration: Configuration) -> [String: Double] {
        configuration.huawei?.rateLimits ?? [:]
    }

    /// `settle enqueue --store huawei --proof-file F`: the file holds what IAP Kit gave the app.
    package static var proofFormat: ProofFormat? {
        ProofFormat(what: "a Huawei IAP Kit purchase (JSON: {\"purchaseOrderId\": ..., \"purchaseToken\": ...})") { text in
            guard let json = try? JSONValue.parse(text) else {
                return .failure(ProofError("a Huawei proof is a JSON object with purchaseOrderId and purchaseToken; the file is not JSON"))
            }
            do throws(ProofReadError) {
                return .success(try HuaweiProof(json: json).storeProof)
            } catch {
                return .failure(ProofError(error.message))
            }
        }
    }

    /// The IAP Kit verifier and finisher; nil without a `huawei` section. The IAP key and the
    /// roots are read now, so a bad key is a configuration fault at start, not at the first order.
    package static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)? {
        guard let settings = context.configuration.huawei else { return nil }
        let client = try client(settings, http: context.client, time: context.ledger.time, pacer: context.pacer, metrics: context.metrics)
        let products = context.configuration.products.filter { $0.value.stores.contains(.huawei) }
        let verifier = IAPKitVerifier(client: client, signedData: HuaweiSignedData(roots: try roots(settings)), appId: settings.appId,
                                      products: products, acceptSandbox: context.configuration.acceptSandbox,
                                      binding: context.configuration.userBinding, time: context.ledger.time)
        var adapter = HuaweiAdapter(verifier: verifier, finisher: HuaweiFinisher(client: client, products: products))
        if let path = settings.notificationsPath {
            var inbox = HuaweiNotificationInbox(ledger: context.ledger, verifier: verifier, products: products,
                                                binding: context.configuration.userBinding, log: context.log, metrics: context.metrics)
            inbox.refundReview = settings.refundReview
            adapter.inbox = (path, inbox)
            if settings.historyCatchUp {
                adapter.catchUp = HuaweiHistoryCatchUp(ledger: context.ledger, client: client, inbox: inbox, log: context.log)
            }
        }
        return adapter
    }

    /// The IAP Kit client a `huawei` section describes, signing with its IAP key.
    package static func client(_ settings: Configuration.HuaweiConfiguration, http: HTTPClient, time: any TimeSource, pacer: Pacer?,
                               metrics: Metrics?) throws(ConfigError) -> IAPKitClient {
        let token = IAPKitToken(issuerId: settings.issuerId, keyId: settings.keyId, appId: settings.appId,
                                key: try settings.loadPrivateKey(), time: time)
        var client = IAPKitClient(baseURL: settings.apiURL, token: token, client: http)
        client.pacer = pacer
        if let metrics {
            client.observe = { call, outcome in metrics.observeStoreRequest(store: Store.huawei.rawValue, call: call, outcome: outcome) }
        }
        return client
    }

    private static func roots(_ settings: Configuration.HuaweiConfiguration) throws(ConfigError) -> [X509Certificate] {
        let roots = try settings.loadRoots()
        guard !roots.isEmpty else { throw ConfigError("huawei.root_certificates: the files hold no certificate") }
        return roots
    }

    /// `settle check-config` reads the IAP key and the roots, as the daemon would at start.
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {
        guard let settings = configuration.huawei else { return }
        _ = try settings.loadPrivateKey()
        _ = try roots(settings)
    }

    /// What `settle check-config` prints of the `huawei` section: the key by its file only.
    package static func describe(_ configuration: Configuration) -> [String] {
        guard let huawei = configuration.huawei else { return [] }
        return ["huawei: app \(huawei.appId), issuer \(huawei.issuerId), key \(huawei.keyId) in \(huawei.privateKeyFile.path) (contents redacted), "
                + "roots \(huawei.rootCertificates.joined(separator: ", ")), api \(ConfigurationText.url(huawei.apiURL))",
                "huawei.rate_limits: " + ConfigurationText.rates(descriptor.publishedRates, huawei.rateLimits) + " (requests a second)"]
    }
}

/// Huawei AppGallery: IAP Kit's status queries, shipped confirm after every delivery, and its
/// key-event notifications on the listener, worked before the claims, with the history catch-up.
package struct HuaweiAdapter: StoreAdapter {
    package var store: Store { .huawei }
    package var verifier: IAPKitVerifier
    package var finisher: (any StoreFinisher)?
    /// The notifications' path and inbox, with `huawei.notifications_path`.
    package var inbox: (path: String, inbox: HuaweiNotificationInbox)?
    package var catchUp: HuaweiHistoryCatchUp?

    package func beforeClaims(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        try inbox?.inbox.processPending(work) ?? .idle
    }

    package var listenerRoutes: [String: ListenerRoute] {
        guard let inbox else { return [:] }
        return [inbox.path: { request in inbox.inbox.answer(request) }]
    }

    package var tasks: [StoreTask] { catchUp.map { [$0.task] } ?? [] }

    package init(verifier: IAPKitVerifier, finisher: HuaweiFinisher) {
        self.verifier = verifier
        self.finisher = finisher
    }

    package func verify(_ order: Order) throws -> Verification { verifier.verify(order) }
}

/// What Huawei's answers mean, in a support agent's words.
enum HuaweiReasons {
    static let words: [String: StoreReasonWords] = [
        "refunded": StoreReasonWords("Huawei revoked the purchase (refunded)"),
        "transaction_not_found": StoreReasonWords("Huawei has no record of this purchase order",
                                                  retryAdvice: "nothing to grant unless Huawei shows the order: check the purchaseOrderId and token the app sent"),
        "bundle_mismatch": StoreReasonWords("the purchase belongs to another Huawei application"),
    ]
}
