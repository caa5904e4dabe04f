/// What a product is, which decides what is granted at most once (`PurchaseEligibility.grantKey`).
/// The raw values are the configuration's `products.*.type`.
package enum ProductKind: String, Sendable, CaseIterable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewable = "auto_renewable"
    case nonRenewing = "non_renewing"
}
