import SettleBase
import SettleModel
import SettleConfig
import SettleGooglePlay
import SettleLedger
import SettleEngine

/// Finds the purchase behind a Google order id (the `GPA.…` in the customer's Google Play
/// receipt e-mail) for `settle status --transaction`, through `orders.get`, and whose it is:
/// the purchase's obfuscated account id, read from Google by the token the order names. The
/// token itself is used, never shown: status prints its fingerprint.
package struct GooglePlayOrderLookup: StoreOrderLookup {
    package enum Result: Sendable, Equatable {
        /// `accountId`: the buyer's `obfuscatedExternalAccountId` (nil: the app set none, or it could not be read).
        case found(PlayOrder, accountId: String?)
        case notFound(String)
        /// Google could not be asked or its answer not used; status goes on without it.
        case unavailable(String)
    }

    package var client: PlayDeveloperClient

    /// Whether `text` is a Google order id (`GPA.1234-5678-9012-34567`, `..0` for a renewal).
    package static func isOrderId(_ text: String) -> Bool {
        text.hasPrefix("GPA.") && (6...128).contains(text.count)
            && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
    }

    /// Built from the configuration's `google_play`, or nil without one.
    package static func configured(_ configuration: Configuration, time: any TimeSource,
                                   pacer: Pacer) throws(ConfigError) -> GooglePlayOrderLookup? {
        let http = HTTPClient(configuration: HTTPClientConfiguration(
            connectTimeout: configuration.http.connectTimeoutSeconds, totalTimeout: configuration.http.timeoutSeconds))
        return try GooglePlayModule.verifier(configuration, client: http, time: time, metrics: nil,
                                                pacer: pacer)
            .map { GooglePlayOrderLookup(client: $0.client) }
    }

    /// Google's answer as `settle status` and the console show it; the order found narrows the
    /// ledger's orders to those holding its purchase.
    package func lookUp(_ orderId: String) -> StoreOrderAnswer {
        let result: Result = lookUpOrder(orderId)
        return StoreOrderAnswer(jsonKey: "google_play_order", title: "Google order", sectionId: "google-order", narrow: { filter in
            if case let .found(order, _) = result {
                filter.storeOrder = StoreOrderMatch(orderId: order.orderId, token: order.purchaseToken)
            }
        }, text: { held in result.text(held: held) }, json: { held in result.json(held: held) })
    }

    package func lookUpOrder(_ orderId: String) -> Result {
        let order: PlayOrder
        do throws(PlayAPIError) {
            order = try client.order(orderId)
        } catch {
            return error.kind == .purchaseNotFound ? .notFound(error.message) : .unavailable(error.message)
        }
        return .found(order, accountId: buyer(order))
    }

    /// The buyer's obfuscated account id, from the purchase the order's token names; nil when it cannot be read.
    private func buyer(_ order: PlayOrder) -> String? {
        guard let item = order.lineItems.first else { return nil }
        if item.isSubscription {
            return try? client.subscriptionPurchase(token: order.purchaseToken).obfuscatedExternalAccountId
        }
        return try? client.productPurchaseV2(token: order.purchaseToken).obfuscatedExternalAccountId
    }
}
