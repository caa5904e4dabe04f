import SettleBase

/// What a store is by nature, whatever the configuration: its names, how it must hear of a
/// delivery, and its published rate limits. A store module declares one and registers it
/// (`StoreRegistry.register`); the core reads it and never asks which store it is.
package struct StoreDescriptor: Sendable {
    /// How a store hears that an order's goods were granted.
    package enum DeliveryNotice: Sendable, Equatable {
        /// It needs to hear nothing.
        case nothing
        /// It must hear of it before settle may call the order finished: it stays `delivering`
        /// until then. With a refund window, the store refunds a purchase it was not told of
        /// within that many seconds (Google: three days).
        case beforeFinished(refundWindowSeconds: Int64?)
        /// It is told after the order is finished, from a queue of its own (Apple's Finish
        /// Transaction, where configured).
        case afterFinished

        package var beforeFinished: Bool {
            if case .beforeFinished = self { return true }
            return false
        }

        package var refundWindowSeconds: Int64? {
            if case let .beforeFinished(window) = self { return window }
            return nil
        }
    }

    package var store: Store
    /// "App Store", "Google Play".
    package var displayName: String
    /// "Apple", "Google": who did or did not confirm.
    package var owner: String
    /// The first part of its log events: `apple.breaker_open`.
    package var logName: String
    /// What is missing from the configuration while its orders cannot be verified.
    package var unconfiguredHint: String
    package var deliveryNotice: DeliveryNotice
    /// Requests a second per endpoint group, as the store publishes them (production).
    package var publishedRates: [String: Double]
    /// A rate's fraction in another environment (Apple's sandbox: a tenth).
    package var environmentRateFractions: [String: Double]
    /// Endpoint groups the store publishes no limit for, with the ceiling (production) the pacer
    /// learns their rate under: a 429 lowers it, successes raise it back (issue 38).
    package var learnedRates: [String: Double] = [:]
    /// The top-level configuration section the store's module reads (`huawei`), kept raw by
    /// the core's configuration and decoded by the module, which names its keys in its errors.
    /// Nil for a store whose module registers decoded sections instead (`ConfigurationSection`).
    package var configurationKey: String? = nil
    /// What the store's own reasons (`purchase_not_found`) mean, in a support agent's words,
    /// and what makes a retry worthwhile; a reason every store may give (`refunded`) in the
    /// store's own words where they say more.
    package var reasons: [String: StoreReasonWords] = [:]
    /// Whether a product without `store` is sold on it: the store settle sold through before
    /// there were more, so that configurations written then mean what they meant.
    package var isDefaultForProducts = false
    /// The names a product's `store` may give for several stores at once, this one among them
    /// (`both`, from the days of two stores).
    package var productStoreAliases: [String] = []
    /// Whether its one-time products come in purchase options (`purchase_option`, `rental_period`).
    package var hasPurchaseOptions = false
    /// Whether it is the store settle served alone before orders named their store: a row that
    /// names none (an older ledger, or an order made without a store) is its (`Store.ofUnnamedOrders`).
    package var heldUnnamedOrders = false
    /// What the store adds to the command line's help, by topic, in a sentence's middle:
    /// `transaction` (what its transaction or order id is: "an Apple transaction id (or original
    /// transaction id)"), `order_lookup` (how an order id the customer was shown is looked up),
    /// `refunded` (what a refund is called there), `ledger` (its tables a copy carries),
    /// `grant_recorded` (a sentence on recording its grants). The core joins every store's.
    package var help: [String: String] = [:]
    /// Order ids settle makes for the purchases this store reports that no backend enqueued
    /// (`apple-…`, `play-…`): a backend's `enqueue` may not use them.
    package var reservedOrderIdPrefix: String?
    /// What status calls the account id an order carries: StoreKit's "app account token", Play
    /// Billing's obfuscated "account id".
    package var accountIdLabel = "app account token"
    /// Whether the account id the app passes at purchase must be a UUID (StoreKit's
    /// appAccountToken is one); `settle bind` refuses anything else for its orders.
    package var accountIdIsUUID = false
    /// The longest account id (in UTF-8 bytes) the store carries, for `settle bind` to refuse a
    /// longer one: Play's obfuscatedExternalAccountId is at most 64 characters.
    package var accountIdMaxLength = 256
    /// Whether its orders are proven by a bearer purchase token (`Order.purchaseToken`), shown
    /// by its fingerprint, or "missing" when a row lacks it.
    package var provenByPurchaseToken = false
    /// What telling it of a delivery is called there: "acknowledge or consume".
    package var finishName = "finish"
    /// Refund kinds (`orders.refund_kind`) this store records that are not the customer's own
    /// refund, so they never count in the customer's refund history (`RefundHistory`): Apple's
    /// `REVOKE` is Family Sharing taking a shared purchase from a family member, who asked for nothing.
    package var refundKindsNotTheCustomers: Set<String> = []

    package init(store: Store, displayName: String, owner: String, logName: String, unconfiguredHint: String,
                 deliveryNotice: DeliveryNotice, publishedRates: [String: Double] = [:],
                 environmentRateFractions: [String: Double] = [:], configurationKey: String? = nil,
                 reasons: [String: StoreReasonWords] = [:],
                 isDefaultForProducts: Bool = false, productStoreAliases: [String] = [], hasPurchaseOptions: Bool = false,
                 heldUnnamedOrders: Bool = false) {
        self.configurationKey = configurationKey
        self.reasons = reasons
        self.isDefaultForProducts = isDefaultForProducts
        self.productStoreAliases = productStoreAliases
        self.hasPurchaseOptions = hasPurchaseOptions
        self.heldUnnamedOrders = heldUnnamedOrders
        self.store = store
        self.displayName = displayName
        self.owner = owner
        self.logName = logName
        self.unconfiguredHint = unconfiguredHint
        self.deliveryNotice = deliveryNotice
        self.publishedRates = publishedRates
        self.environmentRateFractions = environmentRateFractions
    }

    /// The requests a second `group` may make in `environment`: the configured rate, else the
    /// published one, scaled for the environment. Nil for a group the store does not publish
    /// (and was not configured): such calls are not paced.
    package func rate(group: String, environment: String, configured: [String: Double] = [:]) -> Double? {
        guard let rate = configured[group] ?? publishedRates[group] ?? learnedRates[group] else { return nil }
        return rate * (environmentRateFractions[environment] ?? 1)
    }

    /// Whether the pacer learns `group`'s rate (the store publishes none for it) instead of
    /// keeping to a published one.
    package func learns(group: String) -> Bool { publishedRates[group] == nil && learnedRates[group] != nil }

    /// What settle shows for a store no module registered (an order of a store this build does
    /// not know): it waits, named by its raw value.
    static func unregistered(_ store: Store) -> StoreDescriptor {
        StoreDescriptor(store: store, displayName: store.rawValue, owner: "the store \(store.rawValue)", logName: store.rawValue,
                        unconfiguredHint: "this build of settle has no module for \(store.rawValue)", deliveryNotice: .nothing)
    }
}
