import SettleBase
import SettleModel

/// What the customer paid for a Google Play purchase (issue 37): the Orders API's `total`, "the
/// final amount paid by the customer, taking into account discounts and taxes"
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/orders#Order), read with
/// `orders.get` once per verified purchase when `google_play.order_prices` is on. Neither
/// `productsv2` nor `subscriptionsv2` states what was paid (a subscription's
/// `autoRenewingPlan.recurringPrice` is the next renewal's price, not this period's), so it is a
/// second call: off by default, it counts toward the Play Developer API's daily quota, in the
/// `orders` bucket of the pacer at the due orders' priority. Any failure leaves the price unknown
/// (then the configured one) and never fails the verification.
enum PlayOrderPrice {
    /// A Money (`currencyCode`, `units` as an int64 string or number, `nanos` 0 to 999,999,999) in
    /// milliunits, the nanos below a milliunit dropped; nil for anything that is not a price.
    static func price(money: JSONValue?) -> Price? {
        guard let money, case let .string(currency)? = money["currencyCode"] else { return nil }
        let units = money["units"].map { value -> Int64? in
            switch value {
            case let .string(text), let .number(text): return Int64(text)
            default: return nil
            }
        } ?? 0
        let nanos = money["nanos"].map { value -> Int64? in
            if case let .number(text) = value { return Int64(text) }
            return nil
        } ?? 0
        guard let units, let nanos, units >= 0, (0...999_999_999).contains(nanos) else { return nil }
        let (milli, overflow) = units.multipliedReportingOverflow(by: 1000)
        guard !overflow, milli <= Price.maxMilliunits else { return nil }
        return Price(milliunits: milli + nanos / 1_000_000, currency: currency, source: .store)
    }
}

extension PlayDeveloperClient {
    /// `orders.get` for the price only (`PlayOrderPrice`), named apart from support's lookup so its
    /// pacing priority is the due orders' and its metrics say what it was for.
    package func orderTotal(_ orderId: String) throws(PlayAPIError) -> Price? {
        let call = Call(name: "orders.price", method: "GET", segments: ["orders", orderId],
                        permission: .viewFinancialData, orderId: orderId)
        return PlayOrderPrice.price(money: try send(call)["total"])
    }
}

extension PlayVerifier {
    /// The order's price from Google, or nil (unknown) when Google does not answer with one.
    func paid(orderId: String) -> Price? {
        do {
            return try client.orderTotal(orderId)
        } catch {
            return nil
        }
    }
}
