import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleDelivery

extension Reconciler {
    /// Builds the reconciler a configuration describes: the delivery and revoke hooks (their
    /// secrets read, readable ones refused), and each configured store's adapter from its module.
    package static func configured(_ configuration: Configuration, ledger: any SettleLedger, environment: [String: String],
                                  log: Log, metrics: Metrics? = nil,
                                  random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                                  pacer injected: Pacer? = nil, modules: [any StoreModule.Type])
        throws(ConfigError) -> Reconciler {
        log.minimumLevel = configuration.logLevel
        let client = HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: configuration.http.connectTimeoutSeconds, totalTimeout: configuration.http.timeoutSeconds))
        // A test passes one on its clock; a process has one, shared by every call to any store.
        let pacer = injected ?? storePacer(configuration, modules: modules)
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
        // The stores, each from its own section, in the order the application registered them.
        let context = StoreContext(configuration: configuration, ledger: ledger, client: client, pacer: pacer, policy: policy, log: log,
                                   metrics: metrics)
        var stores: [Store: any StoreAdapter] = [:]
        for module in modules {
            if let adapter = try module.adapter(context) { stores[module.descriptor.store] = adapter }
        }
        return Reconciler(configuration: configuration, ledger: ledger, deliverer: deliverer, policy: policy, log: log, metrics: metrics,
                          revokeHook: revokeHook, stores: stores, pacer: pacer)
    }

    /// The one pacer of a process, shared by every call to either store. It reads the wall
    /// clock, not the ledger's: the stores count real seconds, also while the demo's clock races.
    package static func storePacer(_ configuration: Configuration, modules: [any StoreModule.Type], time: any TimeSource = SystemTimeSource(),
                                   sleep: (@Sendable (Double) -> Void)? = nil) -> Pacer {
        let rates = storeRates(configuration, modules: modules)
        let learns: @Sendable (PacerKey) -> Bool = { StoreRateLimits.learns($0) }
        guard let sleep else { return Pacer(time: time, rates: rates, learns: learns) }
        return Pacer(time: time, rates: rates, learns: learns, sleep: sleep)
    }

    /// Each pacer key's requests a second under `configuration` (the published rate where none is configured).
    package static func storeRates(_ configuration: Configuration, modules: [any StoreModule.Type]) -> @Sendable (PacerKey) -> Double? {
        let configured = Dictionary(modules.map { ($0.descriptor.store, $0.configuredRates(configuration)) }) { first, _ in first }
        return { key in StoreRateLimits.rate(key, configured: configured) }
    }
}
