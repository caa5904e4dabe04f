import SettleBase
import SettleModel

/// A signed transaction's price: `price` in milliunits and `currency` (ISO 4217), present
/// together since API 1.9 (https://developer.apple.com/documentation/appstoreserverapi/price).
extension SignedTransaction {
    /// What the customer paid, or nil when Apple's data states no price, or one that is not a
    /// price (negative, past `Price.maxMilliunits`, a fraction, text, a currency that is not
    /// three capital letters): the purchase stays good and its price is unknown, never guessed.
    package var price: Price? {
        guard let amount = payload["price"], case let .string(currency)? = payload["currency"] else { return nil }
        guard let milliunits = Self.wholeMilliunits(amount) else { return nil }
        return Price(milliunits: milliunits, currency: currency, source: .store)
    }

    /// A JSON integer (Apple's `int64`), never a string or a fractional number.
    private static func wholeMilliunits(_ value: JSONValue) -> Int64? {
        guard case let .number(literal) = value else { return nil }
        return Int64(literal)
    }
}
