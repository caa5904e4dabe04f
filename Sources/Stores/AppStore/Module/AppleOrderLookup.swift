import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleLedger
import SettleEngine

/// Finds the purchases behind an Apple order id (the id in the customer's App Store receipt
/// email, e.g. `MQ5Q8W3X2Z`) for `settle status --transaction`, through Look Up Order ID, and
/// verifies each signed transaction Apple returns before anything of it is shown.
package struct AppleOrderLookup: StoreOrderLookup {
    /// One purchase behind the order id, as Apple signed it.
    package struct Purchase: Sendable, Equatable {
        package var transactionId: String
        package var originalTransactionId: String
        package var productId: String
        package var purchaseDateMs: Int64?
        package var refunded: Bool
    }

    package enum Result: Sendable, Equatable {
        case found(orderId: String, environment: AppleEnvironment, purchases: [Purchase])
        case notFound(String)
        /// Apple could not be asked or its answer not used; status goes on without it.
        case unavailable(String)
    }

    package var api: AppStoreServerClient
    package var verifier: SignedDataVerifier
    package var time: any TimeSource

    /// Whether `text` looks like an Apple order id rather than a transaction id (all digits).
    package static func isOrderId(_ text: String) -> Bool {
        (6...64).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
            && text.contains(where: \.isLetter)
    }

    /// Built from the configuration's `server_api`, or nil without one.
    package static func configured(_ configuration: Configuration, time: any TimeSource,
                                   pacer: Pacer) throws(ConfigError) -> AppleOrderLookup? {
        guard let serverAPI = configuration.serverAPI else { return nil }
        let tokens = BearerTokenSource(issuerId: serverAPI.issuerId, keyId: serverAPI.keyId, bundleId: configuration.bundleId,
                                       key: try serverAPI.loadPrivateKey(), time: time)
        let client = HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: configuration.http.connectTimeoutSeconds, totalTimeout: configuration.http.timeoutSeconds))
        var api = AppStoreServerClient(productionURL: serverAPI.productionURL, sandboxURL: serverAPI.sandboxURL, tokens: tokens, client: client)
        // This process's own pacer: a support lookup runs in `settle status`, not in the daemon.
        api.pacer = pacer
        return AppleOrderLookup(
            api: api,
            verifier: SignedDataVerifier(rootCertificates: try serverAPI.loadRoots(), bundleId: configuration.bundleId,
                                         acceptSandbox: configuration.acceptSandbox),
            time: time)
    }

    /// Apple's answer as `settle status` and the console show it; the purchases found narrow the ledger's orders.
    package func lookUp(_ orderId: String) -> StoreOrderAnswer {
        let result: Result = lookUpOrder(orderId)
        return StoreOrderAnswer(jsonKey: "apple_order", title: "Apple order", sectionId: "apple-order", narrow: { filter in
            if case let .found(_, _, purchases) = result {
                filter.transactionIds = purchases.flatMap { [$0.transactionId, $0.originalTransactionId] }
            }
        }, text: { _ in result.text }, json: { _ in result.json })
    }

    package func lookUpOrder(_ orderId: String) -> Result {
        switch api.lookUpOrder(orderId) {
        case let .found(jws, environment):
            var purchases: [Purchase] = []
            for token in jws {
                switch verifier.verifyTransaction(token, now: time.now) {
                case let .success(t):
                    purchases.append(Purchase(transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
                                              productId: t.productId, purchaseDateMs: t.purchaseDateMs,
                                              refunded: t.revocationDateMs != nil))
                case let .failure(failure):
                    return .unavailable("Apple's answer for order \(orderId) failed verification: \(failure)")
                }
            }
            return .found(orderId: orderId, environment: environment, purchases: purchases)
        case let .notFound(message):
            return .notFound(message)
        case let .failed(.paced(message)):
            // Support's lookups keep the bucket's reserve; this one met even that: ask again shortly.
            return .unavailable("\(message); try again in a few seconds")
        case let .failed(outcome):
            return .unavailable("\(outcome)")
        }
    }
}
