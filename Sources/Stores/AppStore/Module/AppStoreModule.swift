import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleLedger
import SettleEngine

/// The App Store as a module: its descriptor, and the adapter its configuration sections
/// (`receipt_api`, `server_api`, `notifications`) describe.
package enum AppStoreModule: StoreModule {
    package static var descriptor: StoreDescriptor {
        var descriptor = StoreDescriptor.appStore
        descriptor.reasons = AppStoreReasons.words
        return descriptor
    }
    package static var migrations: [LedgerMigration] { [AppStoreMigrations.finishQueue] }
    package static var metricFamilies: [any StoreMetricFamilies.Type] { [AppleRequestMetrics.self] }

    package static var configurationSections: [ConfigurationSection] { [.receiptAPI, .serverAPI, .consumption] }
    /// Finish Transaction and Set App Account Token calls owed to Apple, rescued with the core's queues.
    package static var sideQueues: [SideQueue] { [AppleFinishJob.queue, AccountTokenJob.queue] }

    /// An order is verified by Get Transaction Info, its history by Get Transaction History, or
    /// by verifyReceipt.
    package static var verificationRateGroups: Set<String> {
        ["transaction_info", "transaction_history", AppStoreRateGroups.verifyReceipt]
    }

    package static func configuredRates(_ configuration: Configuration) -> [String: Double] {
        // Their groups never overlap: verify_receipt is receipt_api's, the rest server_api's.
        let server = configuration.serverAPI?.rateLimits ?? [:]
        return server.merging(configuration.receiptAPI?.rateLimits ?? [:]) { fromServerAPI, _ in fromServerAPI }
    }

    /// Reads its secrets (refusing readable ones), loads the StoreKit roots and key, and wires
    /// verifyReceipt, StoreKit 2, the Server API and the notification inbox; nil when neither
    /// `receipt_api` nor `server_api` is configured.
    package static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)? {
        let configuration = context.configuration
        guard configuration.receiptAPI != nil || configuration.serverAPI != nil else { return nil }
        let (ledger, client, pacer, metrics, policy, log) = (context.ledger, context.client, context.pacer, context.metrics,
                                                             context.policy, context.log)
        // Products sold on the App Store; Google Play's are the PlayVerifier's.
        let appStoreProducts = configuration.products.filter { $0.value.stores.contains(.appStore) }
        let products = Set(appStoreProducts.keys)
        let eligibility = PurchaseEligibility(products: appStoreProducts.mapValues(\.kind), binding: configuration.userBinding)
        let observe = appleObserver(metrics)
        var receipts: ReceiptVerifier? = nil
        if let api = configuration.receiptAPI {
            let matcher = ReceiptMatcher(bundleId: configuration.bundleId, acceptSandbox: configuration.acceptSandbox,
                                         eligibility: eligibility)
            receipts = ReceiptVerifier(productionURL: api.productionURL, sandboxURL: api.sandboxURL,
                                       sharedSecret: try api.sharedSecretFile.read(), matcher: matcher, client: client,
                                       receiptText: { order in try storedReceipt(order, ledger: ledger) })
            receipts?.observe = observe
            receipts?.pacer = pacer
        }
        var api: AppStoreServerClient? = nil
        var roots: [X509Certificate] = []
        if let serverAPI = configuration.serverAPI {
            let tokens = BearerTokenSource(issuerId: serverAPI.issuerId, keyId: serverAPI.keyId, bundleId: configuration.bundleId,
                                           key: try serverAPI.loadPrivateKey(), time: ledger.time)
            api = AppStoreServerClient(productionURL: serverAPI.productionURL, sandboxURL: serverAPI.sandboxURL, tokens: tokens,
                                       client: client)
            api?.observe = observe
            api?.pacer = pacer
            roots = try serverAPI.loadRoots()
        } else {
            // Any backend may write a signed transaction into the ledger: without the root every
            // genuine one would be refused as forged, so a missing root stops the pass (78) instead.
            roots = try configuration.storeKitRoots()
        }
        var storeKit = StoreKitVerifier(
            signedData: SignedDataVerifier(rootCertificates: roots, bundleId: configuration.bundleId,
                                           acceptSandbox: configuration.acceptSandbox),
            api: api, eligibility: eligibility, time: ledger.time)
        storeKit.linkedUsers = { ids in try ledger.linkedUsers(appTransactionIds: ids) }
        if receipts == nil, let serverAPI = configuration.serverAPI {
            // Receipts are read here, not by Apple: their signatures must chain to these roots.
            let signature = AppReceiptSignature(rootCertificates: try serverAPI.loadReceiptRoots())
            storeKit.legacyReceipt = { order in try legacyReceiptIds(order, ledger: ledger, signature: signature) }
        }
        let inbox = NotificationInbox(
            ledger: ledger,
            verifier: SignedDataVerifier(rootCertificates: roots, bundleId: configuration.bundleId, acceptSandbox: configuration.acceptSandbox,
                                         appAppleId: configuration.serverAPI?.appAppleId),
            rules: NotificationRules(eligibility: eligibility, answerConsumptionRequests: configuration.consumption.respond),
            api: api, consumption: configuration.consumption,
            acceptSandbox: configuration.acceptSandbox, policy: policy, log: log, metrics: metrics,
            backfillSinceMs: configuration.notifications?.backfillSinceMs)
        let finishing = configuration.serverAPI?.finishTransactions == true
        let finishes = FinishTransactionQueue(
            ledger: ledger, api: finishing ? api : nil,
            offWhy: configuration.serverAPI == nil ? "no server_api: Apple is not told" : "server_api.finish_transactions is false",
            policy: policy, log: log)
        var appStore = AppStoreAdapter(receipts: receipts, storeKit: storeKit, products: products, inbox: inbox,
                                       notificationsPath: configuration.notifications?.path, finishes: finishes)
        appStore.historyIntervalSeconds = configuration.notifications?.historyIntervalSeconds
        appStore.accountTokens = api.map { AppAccountTokens(ledger: ledger, api: $0, policy: policy, log: log) }
        return appStore
    }

    private static func appleObserver(_ metrics: Metrics?) -> (@Sendable (AppleEnvironment, String, Double) -> Void)? {
        guard let metrics else { return nil }
        return { environment, outcome, seconds in
            metrics.family(AppleRequestMetrics.self).observe(environment: environment, outcome: outcome, seconds: seconds)
        }
    }

    private static func storedReceipt(_ order: Order, ledger: any OrderLedger) throws -> String? {
        guard let hash = order.receiptSHA256 else { return nil }
        // Read with the order's claim, where it was (`ClaimedReceipts`).
        if let claimed = order.storedReceipt { return claimed }
        return try ledger.receipt(sha256: hash)
    }

    /// The ids a legacy receipt names, read locally once its PKCS#7 signature chains to a receipt
    /// root: lookup keys for the Server API, whose answers are what prove purchases.
    private static func legacyReceiptIds(_ order: Order, ledger: any OrderLedger, signature: AppReceiptSignature) throws -> LegacyReceiptIds? {
        guard let text = try storedReceipt(order, ledger: ledger) else { return nil }
        if let id = TransactionReceipt.transactionId(base64: text) {
            return LegacyReceiptIds(transactionIds: [id], signatureVerified: false, bundleId: TransactionReceipt.bundleId(base64: text),
                                    format: .transactionReceipt)
        }
        switch signature.verify(base64: text) {
        case let .success(verified):
            return LegacyReceiptIds(transactionIds: verified.receipt.transactionIds, signatureVerified: true,
                                    bundleId: verified.receipt.bundleId)
        case let .failure(failure):
            throw LegacyReceiptError(message: "the order's receipt is not accepted: \(failure)", signatureFailure: failure)
        }
    }
}
