
/// What a store must be told once the goods of an order were granted (Google Play: acknowledge
/// or consume). The App Store needs nothing from a server, so App Store orders have none.
package protocol StoreFinisher: Sendable {
    func finish(_ order: Order) -> StoreFinishOutcome
}

package enum StoreFinishOutcome: Sendable, Equatable {
    /// The store knows; the word says how (`acknowledged`, `consumed`, `already_acknowledged`, ...).
    case finished(String)
    /// Not told yet: tried again at the next pass (the order stays delivered, store finish
    /// pending, never delivered again). `configuration`: settle's setup is wrong; stop the pass.
    case failed(String, configuration: Bool)
    /// Not sent, or answered 429 above the bucket's floor, to stay within the store's rate limit
    /// ("paced: <bucket> at N/s"): told at the next pass; the store's breaker hears nothing.
    case paced(String)
    /// The store answered, and refused (a 4xx about this purchase): asked again after a
    /// backoff, counting attempts, then a person decides.
    case refused(String)
}
