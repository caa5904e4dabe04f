/// What re-verifying one order with Apple concluded, classified so the reconciler knows
/// what to do with the order and whether Apple as a whole is in trouble.
public enum VerificationOutcome: Sendable, Equatable {
    /// Apple confirmed the purchase and it matches the order.
    case verified(VerifiedPurchase)
    /// Apple's answer proves there is nothing to grant; `reason` is a stable code.
    case rejected(reason: RejectionReason, detail: String)
    /// A failure of this order's verification that may pass later; uses an attempt.
    case retry(String)
    /// Apple as a whole is unavailable; uses no attempt. `retryAfter` in seconds if Apple said.
    case appleUnavailable(String, retryAfter: Double?)
    /// Our configuration or request is wrong (e.g. 21004 wrong shared secret): stop the pass.
    case configurationFault(String)
}

/// Stable rejection codes shown by `settle status` (SPEC section 4).
public enum RejectionReason: String, Sendable, CaseIterable {
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
    /// Validly signed data whose payload lacks a field settle needs, or has it with the wrong type.
    case payloadInvalid = "payload_invalid"
}

/// The result of one verification with the facts worth keeping in the order's history.
public struct Verification: Sendable, Equatable {
    public var outcome: VerificationOutcome
    /// Apple's `status` field (verifyReceipt) of the last answer, if any.
    public var appleStatus: Int?
    /// The environment that gave the last answer.
    public var environment: String?
    public var durationMs: Int
    /// Whether Apple answered at all (some answer was parsed), for "Apple unavailable for
    /// the whole pass".
    public var appleAnswered: Bool

    public init(outcome: VerificationOutcome, appleStatus: Int? = nil, environment: String? = nil, durationMs: Int = 0,
                appleAnswered: Bool = false) {
        self.outcome = outcome
        self.appleStatus = appleStatus
        self.environment = environment
        self.durationMs = durationMs
        self.appleAnswered = appleAnswered
    }
}

/// Re-verifies one order with Apple. `grantHolder` tells which order (if any) already holds
/// a transaction, so matching can skip transactions granted elsewhere.
public protocol OrderVerifier: Sendable {
    func verify(_ order: Order, grantHolder: (String) throws -> String?) throws -> Verification
}
