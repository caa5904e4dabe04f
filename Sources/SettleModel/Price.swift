/// What a customer paid for one order, as a store or the configuration states it: an integer
/// amount in milliunits of an ISO 4217 currency (4.99 USD is 4990; 1200 JPY is 1 200 000), so
/// every store's spelling (Apple's milliunits, Huawei's hundredths, Google's units and nanos, a
/// decimal text) fits without rounding and no sum ever goes through a floating-point number.
/// Amounts in two currencies are never added together.
package struct Price: Sendable, Equatable {
    /// The amount in thousandths of the currency's main unit: never negative, at most `maxMilliunits`.
    package var milliunits: Int64
    /// Three capital letters (`USD`, `JPY`), as the store or the configuration gave them.
    package var currency: String
    /// Who stated it (the ledger's `price_source`).
    package var source: PriceSource

    /// One billion of a currency's main unit: above any in-app price, and a million such orders
    /// still sum inside Int64 (1e12 milliunits each). A store's larger number is refused, not clamped.
    package static let maxMilliunits: Int64 = 1_000_000_000_000

    /// Nil for an amount below zero or above `maxMilliunits`, or a currency that is not three
    /// capital letters: a store's absurd price is recorded as unknown, never as a number.
    package init?(milliunits: Int64, currency: String, source: PriceSource) {
        guard (0...Price.maxMilliunits).contains(milliunits), Price.isCurrencyCode(currency) else { return nil }
        (self.milliunits, self.currency, self.source) = (milliunits, currency, source)
    }

    /// An amount in hundredths of the main unit (Huawei's `price`, in fen for CNY), scaled
    /// without overflow: nil when the result would not be a price.
    package init?(hundredths: Int64, currency: String, source: PriceSource) {
        let (milli, overflow) = hundredths.multipliedReportingOverflow(by: 10)
        guard !overflow else { return nil }
        self.init(milliunits: milli, currency: currency, source: source)
    }

    /// A decimal text in the main unit (`"4.99"`, `"1200"`, `"10000"`): digits, at most one
    /// point and at most three digits after it; nil for anything else (a sign, an exponent,
    /// spaces, more precision than milliunits hold).
    package init?(decimal text: String, currency: String, source: PriceSource) {
        guard let milli = Price.milliunits(decimal: text) else { return nil }
        self.init(milliunits: milli, currency: currency, source: source)
    }

    /// `"4.99 USD"`, `"1200 JPY"`: the amount with the currency's minor digits (more when the
    /// amount has them), then the code.
    package var text: String { Price.format(milliunits: milliunits, currency: currency) + " " + currency }

    /// The amount as a decimal text with the currency's minor digits, for any integer sum of
    /// milliunits (a report's total): `59880, "USD"` is `"59.88"`.
    package static func format(milliunits: Int64, currency: String) -> String {
        let negative = milliunits < 0
        let magnitude = milliunits.magnitude
        let whole = magnitude / 1000
        var fraction = String(magnitude % 1000)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        let keep = max(minorDigits(currency), fraction.count - fraction.reversed().prefix(while: { $0 == "0" }).count)
        let digits = fraction.prefix(min(3, keep))
        return (negative ? "-" : "") + String(whole) + (digits.isEmpty ? "" : "." + digits)
    }

    /// Whether a text is an ISO 4217 code in form: exactly three ASCII capital letters.
    package static func isCurrencyCode(_ text: String) -> Bool {
        text.utf8.count == 3 && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// How many digits a currency has after the point (ISO 4217's minor unit): 0 for the yen, the
    /// won and their like, 3 for the dinars of Bahrain, Iraq, Jordan, Kuwait, Libya, Oman and
    /// Tunisia, 2 for the rest. Only display and the configuration's check use it: amounts are
    /// kept in milliunits, which hold all of these exactly.
    package static func minorDigits(_ currency: String) -> Int {
        if noMinorUnit.contains(currency) { return 0 }
        return threeDigits.contains(currency) ? 3 : 2
    }

    private static let noMinorUnit: Set<String> = ["BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF",
                                                   "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"]
    private static let threeDigits: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]

    /// Milliunits of a plain decimal text in the main unit; nil for anything but digits with at
    /// most one point and three decimals, or a value past `maxMilliunits`.
    package static func milliunits(decimal text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty, whole.count <= 13,
              whole.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard parts.count == 1 || !fraction.isEmpty, fraction.count <= 3,
              fraction.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let padded = fraction + String(repeating: "0", count: 3 - fraction.count)
        guard let units = Int64(whole), let thousandths = Int64(padded) else {
            return nil
        }
        let milli = units.multipliedReportingOverflow(by: 1000)
        guard !milli.overflow, milli.partialValue <= maxMilliunits - thousandths else { return nil }
        return milli.partialValue + thousandths
    }
}

/// Who stated an order's price; an order without one has no price (`unknown`), never a guess.
package enum PriceSource: String, Sendable, CaseIterable {
    /// The store's verification answer carried it (Apple's signed transaction, Huawei's
    /// purchase data, the fake third store's sale).
    case store
    /// The configuration's `prices` for the product, times the order's quantity.
    case configured
}
