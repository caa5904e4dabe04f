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
    package static var migrations: [LedgerMigration] { [HuaweiMigrations.notifications, HuaweiMigrations.hmsCursor] }
    /// Its stored notifications, which rescue visits after the core's queues.
    package static var sideQueues: [SideQueue] { [HuaweiNotificationRecord.queue] }

    /// An order is verified by the order or the subscription status query.
    package static var verificationRateGroups: Set<String> {
        [HuaweiRateGroups.orders, HuaweiRateGroups.subscriptions]
    }

    package static func configuredRates(_ configuration: Configuration) -> [String: Double] {
        configuration.huawei?.rateLimits ?? [:]
    }

    /// `settle enqueue --store huawei --proof-file F`: the file holds what IAP Kit gave the app.
    package static var proofFormat: ProofFormat? {
        ProofFormat(
            what: "a Huawei purchase (JSON: IAP Kit's {\"purchaseOrderId\", \"purchaseToken\"}, or HMS IAP's "
                + "{\"inAppPurchaseData\", \"inAppDataSignature\"} or {\"purchaseToken\", \"productId\", \"accountFlag\"})"
        ) { text in
            guard let json = try? JSONValue.parse(text), json.objectMembers != nil else {
                return .failure(ProofError("a Huawei proof is a JSON object; the file is not one"))
            }
            do throws(ProofReadError) {
                // IAP Kit's purchases name their purchase order; HMS's do not.
                if json["purchaseOrderId"] != nil { return .success(try HuaweiProof(json: json).storeProof) }
                return .success(try HMSProof(json: json).storeProof)
            } catch {
                return .failure(ProofError(error.message))
            }
        }
    }

    /// IAP Kit's and HMS IAP's verifiers and finishers, as configured; nil without a `huawei`
    /// section. Keys and roots are read now, so a bad one is a configuration fault at start.
    package static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)? {
        guard let settings = context.configuration.huawei else { return nil }
        let products = context.configuration.products.filter { $0.value.stores.contains(.huawei) }
        var adapter = HuaweiAdapter()
        if let kit = settings.iapKit {
            let client = try client(
                settings.appId, kit, http: context.client, time: context.ledger.time, pacer: context.pacer,
                metrics: context.metrics)
            let verifier = IAPKitVerifier(
                client: client, signedData: HuaweiSignedData(roots: try kit.loadRoots()), appId: settings.appId,
                products: products, acceptSandbox: context.configuration.acceptSandbox,
                binding: context.configuration.userBinding, time: context.ledger.time)
            adapter.iapKit = (verifier, HuaweiFinisher(client: client, products: products))
            if let path = settings.notificationsPath {
                var inbox = HuaweiNotificationInbox(
                    ledger: context.ledger, verifier: verifier, products: products,
                    binding: context.configuration.userBinding, log: context.log, metrics: context.metrics)
                inbox.refundReview = settings.refundReview
                adapter.inbox = (path, inbox)
                if settings.historyCatchUp {
                    adapter.catchUp = HuaweiHistoryCatchUp(
                        ledger: context.ledger, client: client, inbox: inbox, log: context.log)
                }
            }
        }
        if let hms = settings.hms {
            let metrics = context.metrics
            let client = try HMSClient(settings.appId, hms, http: context.client, time: context.ledger.time) {
                call, outcome in
                metrics?.observeStoreRequest(store: Store.huawei.rawValue, call: call, outcome: outcome)
            }
            let verifier = HMSVerifier(
                client: client, appId: settings.appId, products: products,
                acceptSandbox: context.configuration.acceptSandbox, binding: context.configuration.userBinding)
            adapter.hms = (verifier, HMSFinisher(client: client))
            if let path = hms.notificationsPath {
                adapter.hmsInbox = (
                    path,
                    HMSNotificationInbox(
                        ledger: context.ledger, verifier: verifier,
                        binding: context.configuration.userBinding, log: context.log)
                )
            }
            adapter.cancelled = HMSCancelledPoll(
                ledger: context.ledger, client: client,
                intervalSeconds: hms.cancelledPollIntervalSeconds, log: context.log)
        }
        return adapter
    }

    /// The IAP Kit client of a `huawei` section, signing with its IAP key.
    package static func client(
        _ appId: String, _ kit: Configuration.HuaweiConfiguration.IAPKit, http: HTTPClient, time: any TimeSource,
        pacer: Pacer?, metrics: Metrics?
    ) throws(ConfigError) -> IAPKitClient {
        let token = IAPKitToken(
            issuerId: kit.issuerId, keyId: kit.keyId, appId: appId, key: try kit.loadPrivateKey(), time: time)
        var client = IAPKitClient(baseURL: kit.apiURL, token: token, client: http)
        client.pacer = pacer
        if let metrics {
            client.observe = { call, outcome in
                metrics.observeStoreRequest(store: Store.huawei.rawValue, call: call, outcome: outcome)
            }
        }
        return client
    }

    /// `settle check-config` reads the keys, the roots and the client secret, as the daemon would at start.
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {
        guard let settings = configuration.huawei else { return }
        if let kit = settings.iapKit {
            _ = try kit.loadPrivateKey()
            _ = try kit.loadRoots()
        }
        if let hms = settings.hms {
            _ = try hms.clientSecretFile.read()
            _ = try hms.loadPublicKey()
        }
    }

    /// What `settle check-config` prints of the `huawei` section: keys and secrets by their file only.
    package static func describe(_ configuration: Configuration) -> [String] {
        guard let huawei = configuration.huawei else { return [] }
        var lines: [String] = []
        if let kit = huawei.iapKit {
            lines.append(
                "huawei: app \(huawei.appId), IAP Kit issuer \(kit.issuerId), key \(kit.keyId) in \(kit.privateKeyFile.path) "
                    + "(contents redacted), roots \(kit.rootCertificates.joined(separator: ", ")), api \(ConfigurationText.url(kit.apiURL))"
            )
        }
        if let hms = huawei.hms {
            lines.append(
                "huawei.hms: app \(huawei.appId), client secret \(hms.clientSecretFile.path) (contents redacted), public key "
                    + "\(hms.publicKeyFile), orders \(ConfigurationText.url(hms.orderURL)), AppTouch \(ConfigurationText.url(hms.appTouchOrderURL)), "
                    + "token \(ConfigurationText.url(hms.tokenURL)), cancelled purchases every \(ConfigurationText.number(hms.cancelledPollIntervalSeconds)) s"
            )
        }
        lines.append(
            "huawei.rate_limits: " + ConfigurationText.rates(descriptor.publishedRates, huawei.rateLimits)
                + " (requests a second)")
        return lines
    }
}

/// Huawei AppGallery: IAP Kit's status queries and HMS IAP's token verification, by the order's
/// proof; shipped confirm or confirm after every delivery; IAP Kit's key-event notifications on
/// the listener, worked before the claims, with the history catch-up; HMS's cancelled purchases
/// after the pass.
package struct HuaweiAdapter: StoreAdapter {
    package var store: Store { .huawei }
    package var iapKit: (verifier: IAPKitVerifier, finisher: HuaweiFinisher)?
    package var hms: (verifier: HMSVerifier, finisher: HMSFinisher)?
    /// The notifications' path and inbox, with `huawei.notifications_path`.
    package var inbox: (path: String, inbox: HuaweiNotificationInbox)?
    package var catchUp: HuaweiHistoryCatchUp?
    package var cancelled: HMSCancelledPoll?
    /// HMS's notifications' path and inbox, with `huawei.hms.notifications_path`.
    package var hmsInbox: (path: String, inbox: HMSNotificationInbox)?

    package init() {}

    package func verify(_ order: Order) throws -> Verification {
        if order.storeProof?.kind == HMSProof.kind {
            guard let hms else { return Self.unconfigured("an HMS IAP order", "huawei.hms") }
            return hms.verifier.verify(order)
        }
        guard let iapKit else {
            return Self.unconfigured("a HarmonyOS IAP Kit order", "IAP Kit's keys in the huawei section")
        }
        return iapKit.verifier.verify(order)
    }

    /// An order of the part of Huawei the configuration leaves out waits, using no attempt.
    private static func unconfigured(_ what: String, _ missing: String) -> Verification {
        var waiting = Verification(outcome: .retry("\(what), and no \(missing) is configured"))
        waiting.keepsAttempt = true
        return waiting
    }

    package var finisher: (any StoreFinisher)? { HuaweiFinishers(iapKit: iapKit?.finisher, hms: hms?.finisher) }

    package func beforeClaims(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let kit = try inbox?.inbox.processPending(work) ?? .idle
        return kit.then(try hmsInbox?.inbox.processPending(work) ?? .idle)
    }

    package func afterPass(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        try cancelled?.pollIfDue(work) ?? .idle
    }

    package var listenerRoutes: [String: ListenerRoute] {
        var routes: [String: ListenerRoute] = [:]
        if let inbox { routes[inbox.path] = { request in inbox.inbox.answer(request) } }
        if let hmsInbox { routes[hmsInbox.path] = { request in hmsInbox.inbox.answer(request) } }
        return routes
    }

    package var tasks: [StoreTask] { catchUp.map { [$0.task] } ?? [] }
}

/// Tells Huawei through the API that verified the order: IAP Kit's shipped confirm, or HMS's confirm.
struct HuaweiFinishers: StoreFinisher {
    let iapKit: HuaweiFinisher?
    let hms: HMSFinisher?

    func finish(_ order: Order) -> StoreFinishOutcome {
        if order.storeProof?.kind == HMSProof.kind {
            return hms?.finish(order)
                ?? .failed("no huawei.hms is configured to confirm the order", configuration: true)
        }
        return iapKit?.finish(order)
            ?? .failed("no IAP Kit keys are configured to confirm the order", configuration: true)
    }
}

/// What Huawei's answers mean, in a support agent's words.
enum HuaweiReasons {
    static let words: [String: StoreReasonWords] = [
        "refunded": StoreReasonWords("Huawei revoked the purchase (refunded)"),
        "transaction_not_found": StoreReasonWords(
            "Huawei has no record of this purchase order",
            retryAdvice:
                "nothing to grant unless Huawei shows the order: check the purchaseOrderId and token the app sent"),
        "bundle_mismatch": StoreReasonWords("the purchase belongs to another Huawei application"),
    ]
}
