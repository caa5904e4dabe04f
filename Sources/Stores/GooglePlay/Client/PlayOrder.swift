import SettleBase
import SettleModel

/// One Google Play order as `orders.get` answers it: what a customer's receipt e-mail names
/// (`GPA.…`), with the purchase token behind it.
/// https://developers.google.com/android-publisher/api-ref/rest/v3/orders#Order
///
/// The state is kept as Google's text (`PROCESSED`, `REFUNDED`, ...), so a state Google adds
/// later survives. The token is held to find the purchase and never printed: only its fingerprint.
package struct PlayOrder: Sendable, Equatable {
    /// One product of the order.
    package struct LineItem: Sendable, Equatable {
        package var productId: String
        package var productTitle: String?
        /// Set for a one-time product (`oneTimePurchaseDetails`): the purchase option bought.
        package var purchaseOptionId: String?
        package var quantity: Int?
        /// Whether the line is a subscription's (`subscriptionDetails`) rather than a one-time product's.
        package var isSubscription: Bool

        package init(productId: String, productTitle: String? = nil, purchaseOptionId: String? = nil, quantity: Int? = nil,
                     isSubscription: Bool = false) {
            self.productId = productId
            self.productTitle = productTitle
            self.purchaseOptionId = purchaseOptionId
            self.quantity = quantity
            self.isSubscription = isSubscription
        }
    }

    package var orderId: String
    package var purchaseToken: PurchaseToken
    package var state: String?
    /// RFC 3339, as Google sends it.
    package var createTime: String?
    package var lineItems: [LineItem]
    /// `total`, Google's Money (`currencyCode`, `units`, `nanos`), as Google sent it (`PlayOrderPrice` reads it).
    package var total: JSONValue? = nil

    package init(orderId: String, purchaseToken: PurchaseToken, state: String?, createTime: String? = nil, lineItems: [LineItem]) {
        self.orderId = orderId
        self.purchaseToken = purchaseToken
        self.state = state
        self.createTime = createTime
        self.lineItems = lineItems
    }

    /// Reads Google's answer; nil without an order id or a usable purchase token.
    package init?(json: JSONValue) {
        guard let orderId = json["orderId"]?.looseString, !orderId.isEmpty,
              let token = json["purchaseToken"]?.looseString.flatMap(PurchaseToken.init) else { return nil }
        let items = (json["lineItems"]?.arrayValue ?? []).compactMap { item -> LineItem? in
            guard let productId = item["productId"]?.looseString, !productId.isEmpty else { return nil }
            let oneTime = item["oneTimePurchaseDetails"]
            return LineItem(productId: productId, productTitle: item["productTitle"]?.looseString,
                            purchaseOptionId: oneTime?["purchaseOptionId"]?.looseString,
                            quantity: oneTime?["quantity"]?.looseInt64.flatMap { Int(exactly: $0) },
                            isSubscription: item["subscriptionDetails"] != nil)
        }
        self.init(orderId: orderId, purchaseToken: token, state: json["state"]?.looseString, createTime: json["createTime"]?.looseString,
                  lineItems: items)
    }

    /// The answer as Google sends it (for the fake Google).
    package var json: JSONValue {
        var members: [(String, JSONValue)] = [("orderId", .string(orderId)), ("purchaseToken", .string(purchaseToken.value))]
        if let state { members.append(("state", .string(state))) }
        if let createTime { members.append(("createTime", .string(createTime))) }
        if let total { members.append(("total", total)) }
        members.append(("lineItems", .array(lineItems.map { item in
            var fields: [(String, JSONValue)] = [("productId", .string(item.productId))]
            if let title = item.productTitle { fields.append(("productTitle", .string(title))) }
            if item.isSubscription {
                fields.append(("subscriptionDetails", .object([])))
            } else {
                var details: [(String, JSONValue)] = []
                if let option = item.purchaseOptionId { details.append(("purchaseOptionId", .string(option))) }
                if let quantity = item.quantity { details.append(("quantity", .number(quantity))) }
                fields.append(("oneTimePurchaseDetails", .object(details)))
            }
            return .object(fields)
        })))
        return .object(members)
    }
}
