
/// What re-verifying one order with its store concluded, classified so the reconciler knows
/// what to do with the order and whether the store as a whole is in trouble.
package enum VerificationOutcome: Sendable, Equatable {
    /// Apple confirmed purchases that fit the order; which one it gets is decided in the
    /// ledger write that reserves it, so two orders can never pick the same one.
    case verified(Match)
    /// Apple's answer proves there is nothing to grant; `reason` is a stable code.
    case rejected(reason: RejectionReason, detail: String)
    /// settle cannot decide this order by itself (its row or proof is unusable, or policy
    /// asks for a person): `needs_attention` at once, never `rejected`.
    case needsAttention(reason: AttentionReason, detail: String)
    /// A failure of this order's verification that may pass later; uses an attempt.
    case retry(String)
    /// The order's store as a whole is unavailable; uses no attempt, counts toward that store's
    /// breaker. `retryAfter` in seconds if the store said.
    case storeUnavailable(String, retryAfter: Double?)
    /// settle held the call back to stay within the store's rate limit (the pacer had no token
    /// in time), or the store answered 429 while settle's bucket was still above its floor: the
    /// order stays due, uses no attempt and no backoff, and the store's breaker hears nothing.
    /// The message starts "paced: <bucket> at N/s".
    case paced(String)
    /// Our configuration or credentials for the order's store are wrong (21004 wrong shared
    /// secret, Google's invalid_grant): that store stops until its breaker lets a probe through.
    case configurationFault(String)
}

/// Stable rejection codes shown by `settle status` (SPEC section 4).
package enum RejectionReason: String, Sendable, CaseIterable {
    case receiptInvalid = "receipt_invalid"
    case bundleMismatch = "bundle_mismatch"
    case transactionNotFound = "transaction_not_found"
    case productMismatch = "product_mismatch"
    case unknownProduct = "unknown_product"
    case refunded
    case alreadyGranted = "already_granted"
    case sandboxNotAccepted = "sandbox_not_accepted"
    /// A StoreKit 2 signed transaction that fails verification (forged or altered).
    case signatureInvalid = "signature_invalid"
    /// Signed data from an environment never accepted (Xcode, LocalTesting).
    case environmentMismatch = "environment_mismatch"
    /// The purchase carries an appAccountToken that is not the order's user's.
    case userMismatch = "user_mismatch"
    /// The transaction was upgraded to another subscription: the new one is what is granted.
    case upgraded
    /// The proof binds the purchase to nobody (a bare transaction id without a matching
    /// appAccountToken) and `user_binding` says to refuse such proofs.
    case proofUnbound = "proof_unbound"
    /// Validly signed data whose payload lacks a field settle needs, or has it with the wrong type.
    case payloadInvalid = "payload_invalid"
    /// Google Play: the purchase was canceled before it was paid (purchaseState 1, a pending
    /// purchase that never completed).
    case canceled
    /// Google Play does not know the purchase token, or no longer honours it (400
    /// purchaseTokenInvalid, 404, 410).
    case purchaseNotFound = "purchase_not_found"
}

/// The result of one verification with the facts worth keeping in the order's history.
package struct Verification: Sendable, Equatable {
    package var outcome: VerificationOutcome
    /// Apple's `status` field (verifyReceipt) of the last answer, if any.
    package var appleStatus: Int?
    /// The environment that gave the last answer.
    package var environment: String?
    package var durationMs: Int
    /// Whether the store answered at all (some answer was parsed): it closes that store's
    /// breaker, and tells "the store was unavailable for the whole pass" from a pass it answered.
    package var storeAnswered: Bool
    /// For `.retry`: the order keeps its attempt, because nothing is wrong with it (a Google Play
    /// purchase still pending payment, Google Play unavailable as a whole). It is tried again
    /// after `retryAfterSeconds`, or the base delay.
    package var keepsAttempt = false
    package var retryAfterSeconds: Double? = nil
    /// What the store's verification learned beyond the answer (the App Store: the order's signed
    /// AppTransaction, verified), for its module to record (`LearnedFacts`); a dry run records nothing.
    package var learned: (any LearnedFact)? = nil
    /// For `.paced`: the store's 429 lowered a bucket that learns its rate (verifyReceipt): the
    /// pacer already slowed down, so the pass goes on claiming the store's orders at the new
    /// rate instead of ending there, as a published rate's 429 ends it (issue 38).
    package var pacerAdapted = false

    package init(outcome: VerificationOutcome, appleStatus: Int? = nil, environment: String? = nil, durationMs: Int = 0,
                storeAnswered: Bool = false) {
        (self.outcome, self.appleStatus, self.environment, self.durationMs) = (outcome, appleStatus, environment, durationMs)
        self.storeAnswered = storeAnswered
    }

    package static func == (a: Verification, b: Verification) -> Bool {
        let sameLearned = switch (a.learned, b.learned) {
        case (nil, nil): true
        case let (x?, y?): x.isSame(as: y)
        default: false
        }
        return sameLearned && a.outcome == b.outcome && a.appleStatus == b.appleStatus && a.environment == b.environment
            && a.durationMs == b.durationMs && a.storeAnswered == b.storeAnswered && a.keepsAttempt == b.keepsAttempt
            && a.retryAfterSeconds == b.retryAfterSeconds && a.pacerAdapted == b.pacerAdapted
    }
}

/// Re-verifies one order with Apple. Pure with respect to the ledger: which candidate the
/// order gets is decided when the ledger reserves it.
package protocol OrderVerifier: Sendable {
    func verify(_ order: Order) throws -> Verification
}

/// The purchases Apple confirmed for an order, most preferred first.
package struct Match: Sendable, Equatable {
    /// Every candidate passed every check (bundle, product, environment, not refunded, not
    /// upgraded, the user's token). The ledger gives the order the first one no other order
    /// holds and nobody granted outside settle.
    package var candidates: [VerifiedPurchase]
    /// The order named its transaction (a transaction id or a signed transaction): its one
    /// candidate is the purchase it claims. Otherwise it was matched by product, oldest first.
    package var named: Bool
    /// Purchases of the order's product that Apple confirmed but that cannot be granted, by
    /// grant key, with why: an order that already holds one of them is rejected for that reason.
    package var excluded: [String: Exclusion]

    package init(candidates: [VerifiedPurchase], named: Bool, excluded: [String: Exclusion] = [:]) {
        self.candidates = candidates
        self.named = named
        self.excluded = excluded
    }

    package static func only(_ purchase: VerifiedPurchase) -> Match { Match(candidates: [purchase], named: true) }
}

/// Why a purchase Apple confirmed is not granted.
package struct Exclusion: Sendable, Equatable {
    package var reason: RejectionReason
    package var detail: String

    package init(_ reason: RejectionReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }
}
