import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleGooglePlay
import SettleLedger
import SettleDelivery

extension Reconciler {
    /// Builds the reconciler a configuration describes: reads its secrets (refusing readable
    /// ones), loads the StoreKit roots and key, and wires the verifiers and the delivery hook.
    package static func configured(_ configuration: Configuration, ledger: any SettleLedger, environment: [String: String],
                                  log: Log, metrics: Metrics? = nil,
                                  random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                                  pacer injected: Pacer? = nil)
        throws(ConfigError) -> Reconciler {
        log.minimumLevel = configuration.logLevel
        let client = HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: configuration.http.connectTimeoutSeconds, totalTimeout: configuration.http.timeoutSeconds))
        // Products sold on the App Store; Google Play's are the PlayVerifier's.
        let appStoreProducts = configuration.products.filter { $0.value.stores.contains(.appStore) }
        let products = Set(appStoreProducts.keys)
        let eligibility = PurchaseEligibility(products: appStoreProducts.mapValues(\.kind), binding: configuration.userBinding)
        let observe = appleObserver(metrics)
        // A test passes one on its clock; a process has one, shared by every call to either store.
        let pacer = injected ?? storePacer(configuration)
        var receipts: ReceiptVerifier? = nil
        if let api = configuration.receiptAPI {
            let matcher = ReceiptMatcher(bundleId: configuration.bundleId, acceptSandbox: configuration.acceptSandbox,
                                         eligibility: eligibility)
            receipts = ReceiptVerifier(productionURL: api.productionURL, sandboxURL: api.sandboxURL,
                                       sharedSecret: try api.sharedSecretFile.read(), matcher: matcher, client: client,
                                       receiptText: { order in try storedReceipt(order, ledger: ledger) })
            receipts?.observe = observe
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
            // A Google Play-only installation verifies no App Store order, so needs no Apple root.
            let appleConfigured = configuration.receiptAPI != nil || configuration.serverAPI != nil
            roots = appleConfigured ? try configuration.storeKitRoots() : ((try? configuration.storeKitRoots()) ?? [])
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
        let deliverer: any Deliverer
        var revokeHook: RevokeHook? = nil
        switch configuration.delivery.method {
        case let .command(arguments):
            var hook = CommandHook(arguments: arguments, timeoutSeconds: configuration.delivery.timeoutSeconds,
                                   products: configuration.products, baseEnvironment: environment,
                                   passedThrough: configuration.delivery.environment)
            hook.batchSize = configuration.delivery.batchSize
            deliverer = hook
            revokeHook = configuration.delivery.revokeCommand.map { argv in
                .command(CommandHook(arguments: argv, timeoutSeconds: configuration.delivery.timeoutSeconds, products: configuration.products,
                                     baseEnvironment: environment, passedThrough: configuration.delivery.environment))
            }
        case let .webhook(url, secretFile):
            let webhook = WebhookHook(url: url, secret: try secretFile.read(), timeoutSeconds: configuration.delivery.timeoutSeconds,
                                      connectTimeoutSeconds: configuration.http.connectTimeoutSeconds,
                                      products: configuration.products, time: ledger.time)
            deliverer = webhook
            // Revokes never go to the grant URL: only to a revoke URL of their own, when configured.
            revokeHook = configuration.delivery.revokeURL.map { revokeURL in
                var revoke = webhook
                revoke.url = revokeURL
                return .webhook(revoke)
            }
        }
        let policy = RetryPolicy(configuration.schedule, random: random)
        let inbox = NotificationInbox(
            ledger: ledger,
            verifier: SignedDataVerifier(rootCertificates: roots, bundleId: configuration.bundleId, acceptSandbox: configuration.acceptSandbox,
                                         appAppleId: configuration.serverAPI?.appAppleId),
            rules: NotificationRules(eligibility: eligibility, answerConsumptionRequests: configuration.consumption.respond),
            api: api, consumption: configuration.consumption,
            acceptSandbox: configuration.acceptSandbox, policy: policy, log: log, metrics: metrics,
            backfillSinceMs: configuration.notifications?.backfillSinceMs)
        // The stores, each from its own section: where a third store's adapter would be made.
        var stores: [Store: any StoreAdapter] = [:]
        if configuration.receiptAPI != nil || configuration.serverAPI != nil {
            let finishing = configuration.serverAPI?.finishTransactions == true
            let finishes = FinishTransactionQueue(
                ledger: ledger, api: finishing ? api : nil,
                offWhy: configuration.serverAPI == nil ? "no server_api: Apple is not told" : "server_api.finish_transactions is false",
                policy: policy, log: log)
            var appStore = AppStoreAdapter(receipts: receipts, storeKit: storeKit, products: products, inbox: inbox,
                                           notificationsPath: configuration.notifications?.path, finishes: finishes)
            appStore.historyIntervalSeconds = configuration.notifications?.historyIntervalSeconds
            appStore.accountTokens = api.map { AppAccountTokens(ledger: ledger, api: $0, policy: policy, log: log) }
            stores[.appStore] = appStore
        }
        if let play = try googlePlay(configuration, client: client, time: ledger.time, metrics: metrics,
                                     records: PlayLedgerRecords(ledger: ledger), pacer: pacer),
           let settings = configuration.googlePlay {
            var playInbox: PlayNotificationInbox? = nil
            if let push = settings.push, settings.notificationsPath != nil {
                let keys = GooglePushKeys(url: push.jwksURL, fallback: try settings.loadPushKeyFile(), client: client, time: ledger.time,
                                          log: log)
                playInbox = PlayNotificationInbox(
                    ledger: ledger, authenticator: PushAuthenticator(keys: keys, audience: push.audience,
                                                                     serviceAccountEmail: push.serviceAccountEmail, time: ledger.time),
                    packageName: settings.packageName, client: play.client, products: configuration.products,
                    binding: configuration.userBinding, log: log, metrics: metrics)
                playInbox?.refundReview = settings.refundReview
            }
            stores[.googlePlay] = GooglePlayAdapter(
                verifier: play, finisher: PlayFinisher(client: play.client, products: configuration.products), inbox: playInbox,
                notificationsPath: settings.notificationsPath,
                voided: PlayVoidedPoll(ledger: ledger, client: play.client, intervalSeconds: settings.voidedPollIntervalSeconds, log: log))
        }
        return Reconciler(configuration: configuration, ledger: ledger, deliverer: deliverer, policy: policy, log: log, metrics: metrics,
                          revokeHook: revokeHook, stores: stores, pacer: pacer)
    }

    /// The Google Play verifier a `google_play` section describes: the service account key is
    /// read (and refused when others may read it) and loaded now, so a bad key is a configuration
    /// fault at start, not at the first Play order.
    package static func googlePlay(_ configuration: Configuration, client: HTTPClient, time: any TimeSource,
                           metrics: Metrics?, records: (any PlayGrantRecords)? = nil,
                           pacer: Pacer? = nil) throws(ConfigError) -> PlayVerifier? {
        guard let settings = configuration.googlePlay else { return nil }
        let key = try settings.loadServiceAccountKey()
        let tokens = GoogleAccessTokenSource(key: key, tokenURL: settings.tokenURL, client: client, time: time)
        var api = PlayDeveloperClient(packageName: settings.packageName, baseURL: settings.apiURL, tokens: tokens, client: client)
        api.pacer = pacer
        if let metrics {
            api.observe = { call, outcome, _ in metrics.observeStoreRequest(store: Store.googlePlay.rawValue, call: call, outcome: outcome) }
        }
        let products = configuration.products.filter { $0.value.stores.contains(.googlePlay) }
        return PlayVerifier(client: api, products: products, acceptSandbox: configuration.acceptSandbox, binding: configuration.userBinding,
                            time: time, records: records)
    }

    /// The one pacer of a process, shared by every call to either store. It reads the wall
    /// clock, not the ledger's: the stores count real seconds, also while the demo's clock races.
    package static func storePacer(_ configuration: Configuration, time: any TimeSource = SystemTimeSource(),
                                   sleep: (@Sendable (Double) -> Void)? = nil) -> Pacer {
        let rates = storeRates(configuration)
        guard let sleep else { return Pacer(time: time, rates: rates) }
        return Pacer(time: time, rates: rates, sleep: sleep)
    }

    /// Each pacer key's requests a second under `configuration` (the published rate where none is configured).
    package static func storeRates(_ configuration: Configuration) -> @Sendable (PacerKey) -> Double? {
        let apple = configuration.serverAPI?.rateLimits ?? [:]
        let google = configuration.googlePlay?.rateLimits ?? [:]
        return { key in StoreRateLimits.rate(key, configured: [.appStore: apple, .googlePlay: google]) }
    }

    private static func appleObserver(_ metrics: Metrics?) -> (@Sendable (AppleEnvironment, String, Double) -> Void)? {
        guard let metrics else { return nil }
        return { environment, outcome, seconds in
            metrics.observeAppleRequest(environment: environment, outcome: outcome, seconds: seconds)
        }
    }

    private static func storedReceipt(_ order: Order, ledger: any OrderLedger) throws -> String? {
        guard let hash = order.receiptSHA256 else { return nil }
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
