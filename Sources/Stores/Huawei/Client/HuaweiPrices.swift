import SettleBase
import SettleModel

extension HuaweiPurchaseOrder {
    /// What the customer paid: Huawei's `price` is the amount times 100 (fen for CNY) with its
    /// ISO 4217 `currency`. Nil without both, or for one that is not a price (past
    /// `Price.maxMilliunits`, a currency that is not three capital letters): unknown, never guessed.
    package var paid: Price? {
        guard let price, let currency else { return nil }
        return Price(hundredths: price, currency: currency, source: .store)
    }
}

extension HMSPurchase {
    /// HMS IAP's InAppPurchaseData states `price` (the amount times 100, a whole number) and
    /// `currency`; anything else is no price (nil), and the purchase is read all the same.
    static func paid(_ json: JSONValue) -> Price? {
        guard let price = json["price"], let currency = json["currency"]?.looseString else { return nil }
        let hundredths: Int64? = switch price {
        case let .number(text), let .string(text): Int64(text)
        default: nil
        }
        return hundredths.flatMap { Price(hundredths: $0, currency: currency, source: .store) }
    }
}

extension VerifiedPurchase {
    /// The purchase with the price its store's answer states.
    func paying(_ price: Price?) -> VerifiedPurchase {
        var purchase = self
        purchase.price = price
        return purchase
    }
}
