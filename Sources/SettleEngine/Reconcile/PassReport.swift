import SettleModel

/// What one pass did, for `settle reconcile`'s output and exit code and the daemon's status line.
package struct PassReport: Sendable, Equatable {
    package var reconciled = 0
    package var finished = 0
    package var rejected = 0
    package var retrying = 0
    package var needsAttention = 0
    /// Verifications that got an answer from their store (any answer, even a rejection), by store.
    package var storeAnswers: [Store: Int] = [:]
    /// Verifications that failed because their store as a whole was unavailable, by store.
    package var storeWideFailures: [Store: Int] = [:]
    /// Calls deferred to stay within a store's rate limit, by store, and the first one's reason
    /// ("paced: <bucket> at N/s"): the store's claims stopped for the pass, its breaker untouched.
    package var paced: [Store: Int] = [:]
    package var pacedBy: [Store: String] = [:]
    /// The stores whose breaker opened during this pass (their claims stopped; the others' went on).
    package var breakersOpened: Set<Store> = []
    /// The stores whose breaker was already open: none of their orders was claimed; each is
    /// asked again at the time given.
    package var breakerWaits: [Store: Int64] = [:]
    /// A store whose configuration or credentials are wrong (21004, Google's invalid_grant):
    /// that store stopped, the others went on.
    package var storeConfigurationFaults: [Store: String] = [:]
    /// Set when the whole pass stopped on a fault of settle's own setup (the delivery hook
    /// cannot start).
    package var deliveryConfigurationFault: String?
    /// Revokes the hook confirmed and refund requests answered (notifications' work).
    package var revoked = 0
    package var refundRequestsAnswered = 0
    /// Named orders (`--order`) that were not reconciled, and why.
    package var skipped: [SkippedOrder] = []

    package struct SkippedOrder: Sendable, Equatable {
        package var orderId: String
        package var why: String
        package var exists: Bool
    }

    package init() {}

    /// The fault that makes a one-shot pass exit 78: the hook's, else the first store's.
    package var configurationFault: String? {
        deliveryConfigurationFault ?? Store.allCases.lazy.compactMap { storeConfigurationFaults[$0] }.first
    }

    /// The stores that never answered during a pass that needed them.
    package var storesUnavailableForWholePass: [Store] {
        Store.allCases.filter { store in
            (storeAnswers[store] ?? 0) == 0 && ((storeWideFailures[store] ?? 0) > 0 || breakerWaits[store] != nil)
        }
    }

    /// No store answered, and at least one was needed and unavailable (held back or failing).
    package var storeUnavailableForWholePass: Bool {
        !storesUnavailableForWholePass.isEmpty && storeAnswers.values.reduce(0, +) == 0
    }

    package var summaryLine: String {
        var line = "reconciled \(reconciled): \(finished) finished, \(rejected) rejected, \(retrying) retrying, \(needsAttention) needs attention"
        if revoked > 0 { line += ", \(revoked) revoked" }
        if refundRequestsAnswered > 0 { line += ", \(refundRequestsAnswered) refund requests answered" }
        let paced = paced.values.reduce(0, +)
        if paced > 0 { line += ", \(paced) paced" }
        return line
    }
}
