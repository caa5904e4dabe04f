import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleGooglePlay
import SettleLedger
import SettleEngine

/// Google Play as a module: its descriptor, and the adapter its `google_play` section describes.
package enum GooglePlayModule: StoreModule {
    package static var descriptor: StoreDescriptor {
        var descriptor = StoreDescriptor.googlePlay
        descriptor.reasons = GooglePlayReasons.words
        return descriptor
    }
    package static var metricFamilies: [any StoreMetricFamilies.Type] { [PushKeyMetrics.self] }

    package static var configurationSections: [ConfigurationSection] { [.googlePlay] }
    /// Its side queues, which rescue visits after the core's.
    package static var sideQueues: [SideQueue] { [PlayNotificationRecord.queue] }
    /// What Google voided (the voided purchases poll, a confirmed push) is never granted.
    package static var voidedPurchaseFilter: VoidedPurchaseFilter? {
        VoidedPurchaseFilter(rejection: "Google Play voided this purchase (refunded, charged back or revoked) before delivery")
            { try $0.removingPlayVoided($1) }
    }

    /// An order is verified by the one-time purchases or the subscriptions endpoint.
    package static var verificationRateGroups: Set<String> { ["one_time_purchases", "subscriptions"] }

    package static func configuredRates(_ configuration: Configuration) -> [String: Double] {
        configuration.googlePlay?.rateLimits ?? [:]
    }

    /// The Play Developer API, acknowledge or consume, the push inbox and the voided purchases
    /// poll; nil without a `google_play` section.
    package static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)? {
        let configuration = context.configuration
        let (ledger, client, pacer, metrics, log) = (context.ledger, context.client, context.pacer, context.metrics, context.log)
        guard let play = try verifier(configuration, client: client, time: ledger.time, metrics: metrics,
                                      records: PlayLedgerRecords(ledger: ledger), pacer: pacer),
              let settings = configuration.googlePlay else {
            return nil
        }
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
        return GooglePlayAdapter(
            verifier: play, finisher: PlayFinisher(client: play.client, products: configuration.products,
                                                 binding: configuration.userBinding), inbox: playInbox,
            notificationsPath: settings.notificationsPath,
            voided: PlayVoidedPoll(ledger: ledger, client: play.client, intervalSeconds: settings.voidedPollIntervalSeconds, log: log))
    }

    /// The Google Play verifier a `google_play` section describes: the service account key is
    /// read (and refused when others may read it) and loaded now, so a bad key is a configuration
    /// fault at start, not at the first Play order.
    package static func verifier(_ configuration: Configuration, client: HTTPClient, time: any TimeSource,
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
                            time: time, records: records, readsOrderPrices: settings.orderPrices)
    }
}
