import SettleBase
import SettleModel

extension ConfigurationDecoder {
    /// `prices`: product id → `"AMOUNT CUR"` (`"4.99 USD"`, `"1200 JPY"`), the price of one unit
    /// of a product whose store's answer states none (a verifyReceipt receipt, a Google Play
    /// purchase, a ONE store one), so `settle report` can count what settle recovered. A product
    /// left out stays `unknown`: settle never guesses a price. Each entry names a configured
    /// product, a currency of three capital letters, and a plain decimal amount (no sign, no
    /// exponent) with no more digits after the point than the currency has (two for USD, none
    /// for JPY, three for KWD).
    package func decodePrices(_ object: ConfigObject,
                              products: [String: Configuration.Product]) throws(ConfigError) -> [String: Price] {
        var o = object
        var prices: [String: Price] = [:]
        for product in o.allKeys() {
            let key = o.name(product)
            guard let text = try o.string(product) else { continue }
            guard products[product] != nil else {
                throw ConfigError("\(key): \"\(PrintableText.escape(product))\" is not one of products")
            }
            prices[product] = try Self.price(text, key: key)
        }
        return prices
    }

    /// One `"AMOUNT CUR"`, checked as `decodePrices` says.
    static func price(_ text: String, key: String) throws(ConfigError) -> Price {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        let shown = PrintableText.escape(text)
        guard parts.count == 2, Price.isCurrencyCode(String(parts[1])) else {
            throw ConfigError("\(key): \"\(shown)\" is not AMOUNT CURRENCY (like \"4.99 USD\" or \"1200 JPY\": "
                              + "the ISO 4217 code in three capital letters)")
        }
        let (amount, currency) = (String(parts[0]), String(parts[1]))
        let decimals = amount.split(separator: ".", omittingEmptySubsequences: false).dropFirst().first?.count ?? 0
        guard let price = Price(decimal: amount, currency: currency, source: .configured) else {
            let why = amount.hasPrefix("-") ? "a price is never negative"
                : "the amount is not a plain decimal number (digits and at most one point) "
                    + "up to \(Price.maxMilliunits / 1000)"
            throw ConfigError("\(key): \"\(shown)\": \(why)")
        }
        guard decimals <= Price.minorDigits(currency) else {
            let digits = Price.minorDigits(currency)
            throw ConfigError("\(key): \"\(shown)\": \(currency) has \(digits) digits after the point, "
                              + "the amount has \(decimals)")
        }
        return price
    }
}

extension Configuration {
    /// The configured price of `quantity` units of `productId` (`prices`), nil when none is
    /// configured or the total would pass `Price.maxMilliunits`.
    package func configuredPrice(of productId: String, quantity: Int) -> Price? {
        guard let unit = prices[productId] else { return nil }
        let (total, overflow) = unit.milliunits.multipliedReportingOverflow(by: Int64(max(1, quantity)))
        return overflow ? nil : Price(milliunits: total, currency: unit.currency, source: .configured)
    }
}
