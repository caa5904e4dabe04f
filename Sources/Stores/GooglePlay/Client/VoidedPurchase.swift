import SettleBase
import SettleModel

/// A purchase Google canceled, refunded or charged back, as `purchases.voidedpurchases.list` lists it.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.voidedpurchases
package struct VoidedPurchase: Sendable, Equatable {
    package enum Source: Int, Sendable {
        case user = 0
        case developer = 1
        case google = 2
    }

    package enum Reason: Int, Sendable {
        case other = 0
        case remorse = 1
        case notReceived = 2
        case defective = 3
        case accidentalPurchase = 4
        case fraud = 5
        case friendlyFraud = 6
        case chargeback = 7
        case unacknowledgedPurchase = 8
    }

    /// Finds the order; a bearer secret like every purchase token.
    package var purchaseToken: PurchaseToken
    /// The grant key of what was voided (for subscriptions, the one renewal's order).
    package var orderId: String?
    package var purchaseTimeMillis: Int64?
    package var voidedTimeMillis: Int64?
    package var rawVoidedSource: Int?
    package var rawVoidedReason: Int?
    /// Set for a quantity-based partial refund: how many of a multi-quantity purchase were voided.
    package var voidedQuantity: Int?

    package var voidedSource: Source? { rawVoidedSource.flatMap(Source.init(rawValue:)) }
    package var voidedReason: Reason? { rawVoidedReason.flatMap(Reason.init(rawValue:)) }

    package init(purchaseToken: PurchaseToken, orderId: String?, purchaseTimeMillis: Int64? = nil, voidedTimeMillis: Int64? = nil,
                rawVoidedSource: Int? = nil, rawVoidedReason: Int? = nil, voidedQuantity: Int? = nil) {
        self.purchaseToken = purchaseToken
        self.orderId = orderId
        self.purchaseTimeMillis = purchaseTimeMillis
        self.voidedTimeMillis = voidedTimeMillis
        self.rawVoidedSource = rawVoidedSource
        self.rawVoidedReason = rawVoidedReason
        self.voidedQuantity = voidedQuantity
    }

    /// Nil when the entry has no usable purchase token: nothing could be matched with it.
    package init?(json: JSONValue) {
        guard case let .string(text)? = json["purchaseToken"], let token = PurchaseToken(text) else { return nil }
        func int(_ key: String) -> Int? { json[key]?.looseInt64.flatMap { Int(exactly: $0) } }
        self.init(purchaseToken: token, orderId: json["orderId"]?.looseString.flatMap { $0.isEmpty ? nil : $0 },
                  purchaseTimeMillis: json["purchaseTimeMillis"]?.looseInt64, voidedTimeMillis: json["voidedTimeMillis"]?.looseInt64,
                  rawVoidedSource: int("voidedSource"), rawVoidedReason: int("voidedReason"), voidedQuantity: int("voidedQuantity"))
    }

    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("kind", .string("androidpublisher#voidedPurchase")),
                                              ("purchaseToken", .string(purchaseToken.value))]
        if let orderId { members.append(("orderId", .string(orderId))) }
        if let purchaseTimeMillis { members.append(("purchaseTimeMillis", .string(String(purchaseTimeMillis)))) }
        if let voidedTimeMillis { members.append(("voidedTimeMillis", .string(String(voidedTimeMillis)))) }
        if let rawVoidedSource { members.append(("voidedSource", .number(rawVoidedSource))) }
        if let rawVoidedReason { members.append(("voidedReason", .number(rawVoidedReason))) }
        if let voidedQuantity { members.append(("voidedQuantity", .number(voidedQuantity))) }
        return .object(members)
    }
}

/// One page of `purchases.voidedpurchases.list`.
package struct VoidedPurchasePage: Sendable, Equatable {
    package var purchases: [VoidedPurchase]
    /// `tokenPagination.nextPageToken`: pass it to get the next page; nil on the last one.
    package var nextPageToken: String?
    /// Entries skipped because they carried no usable purchase token.
    package var unreadable: Int

    package init(purchases: [VoidedPurchase], nextPageToken: String?, unreadable: Int = 0) {
        self.purchases = purchases
        self.nextPageToken = nextPageToken
        self.unreadable = unreadable
    }
}
