import Foundation

extension Reconciler {
    /// Builds the reconciler a configuration describes: reads its secrets (refusing readable
    /// ones), and wires the verifiers and the delivery hook.
    public static func configured(_ configuration: Configuration, ledger: Ledger, environment: [String: String],
                                  log: Log, metrics: Metrics? = nil,
                                  random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) })
        throws(ConfigError) -> Reconciler {
        let client = HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: configuration.http.connectTimeoutSeconds, totalTimeout: configuration.http.timeoutSeconds))
        let products = Set(configuration.products.keys)
        var receipts: ReceiptVerifier? = nil
        if let api = configuration.receiptAPI {
            let secret = try api.sharedSecretFile.read()
            let matcher = ReceiptMatcher(bundleId: configuration.bundleId, acceptSandbox: configuration.acceptSandbox,
                                         products: products)
            receipts = ReceiptVerifier(productionURL: api.productionURL, sandboxURL: api.sandboxURL, sharedSecret: secret,
                                       matcher: matcher, client: client) { order in
                guard let hash = order.receiptSHA256 else { return nil }
                return try ledger.receipt(sha256: hash)
            }
            if let metrics {
                receipts?.observe = { environment, outcome, seconds in
                    metrics.observeAppleRequest(environment: environment, outcome: outcome, seconds: seconds)
                }
            }
        }
        let deliverer: any Deliverer
        switch configuration.delivery.method {
        case let .command(arguments):
            deliverer = CommandHook(arguments: arguments, timeoutSeconds: configuration.delivery.timeoutSeconds,
                                    products: configuration.products, baseEnvironment: environment)
        case .webhook:
            throw ConfigError("delivery.webhook: webhook delivery is not supported by this settle yet; use delivery.command")
        }
        return Reconciler(configuration: configuration, ledger: ledger,
                          verifier: ProofRouter(receipts: receipts, products: products), deliverer: deliverer,
                          policy: RetryPolicy(configuration.schedule, random: random), log: log, metrics: metrics)
    }
}
