/// Why a call to a store's server API gave no usable answer, classified for the order and the
/// store's breaker. A store client names it `Failure` and says which of its answers is which kind.
package struct StoreCallFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The store has no such purchase.
        case notFound
        /// settle's setup is wrong (its credentials refused): the store stops.
        case configuration
        /// The store answered about this purchase and refused it.
        case refused
        /// No useful answer: unreachable, 5xx, a refusal of the moment, garbage.
        case unavailable
        /// Held back by the pacer (the store's `rate_limits`): the work waits, no attempt used.
        case paced
    }
    package var kind: Kind
    package var message: String
    /// The store's own code for its answer, when it gave one.
    package var code: String?
    package var retryAfter: Double?

    package init(_ kind: Kind, _ message: String, code: String? = nil, retryAfter: Double? = nil) {
        (self.kind, self.message, self.code, self.retryAfter) = (kind, message, code, retryAfter)
    }

    package var description: String { message }
}
