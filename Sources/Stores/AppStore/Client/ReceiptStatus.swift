
/// How a verifyReceipt `status` is handled (SPEC section 4, apple-protocol.md 1.8).
/// https://developer.apple.com/documentation/appstorereceipts/status
package enum ReceiptStatus: Equatable, Sendable {
    case valid
    /// 21006: an iOS 6-style subscription receipt that is genuine but expired. Apple still
    /// returns the receipt, so it is an answer like 0: what it proves is for the matcher to say
    /// (an expired subscription may still be a paid order).
    case validExpired
    /// 21007: a sandbox receipt sent to production.
    case sandboxReceipt
    /// 21008: a production receipt sent to sandbox.
    case productionReceipt
    /// Temporary for this order (21002: malformed, or a temporary issue); uses an attempt.
    case retryOrder
    /// Apple-wide trouble (21005, 21009, retryable 21100-21199); uses no attempt.
    case storeUnavailable
    /// The receipt is not genuine or no longer valid (21003, 21010, non-retryable 211xx).
    case invalid
    /// Our request or configuration is wrong (21000 not a POST / unreadable, 21004 shared secret).
    case configurationFault
    /// Anything else (21001, unknown codes): retried, and a person sees it at max_attempts.
    case unexpected

    package init(status: Int, isRetryable: Bool?) {
        switch status {
        case 0: self = .valid
        case 21006: self = .validExpired
        case 21007: self = .sandboxReceipt
        case 21008: self = .productionReceipt
        case 21002: self = .retryOrder
        case 21005, 21009: self = .storeUnavailable
        case 21003, 21010: self = .invalid
        case 21000, 21004: self = .configurationFault
        case 21100...21199: self = isRetryable == true ? .storeUnavailable : .invalid
        default: self = .unexpected
        }
    }

    package static func explain(_ status: Int) -> String {
        switch status {
        case 0: return "valid"
        case 21000: return "request not readable by Apple (21000)"
        case 21002: return "receipt data malformed or temporary issue (21002)"
        case 21003: return "receipt could not be authenticated (21003)"
        case 21004: return "shared secret does not match (21004)"
        case 21005: return "receipt server temporarily unavailable (21005)"
        case 21006: return "valid, subscription expired (21006)"
        case 21007: return "sandbox receipt sent to production (21007)"
        case 21008: return "production receipt sent to sandbox (21008)"
        case 21009: return "internal data access error (21009)"
        case 21010: return "user account not found or deleted (21010)"
        case 21100...21199: return "internal data access error (\(status))"
        default: return "unexpected status \(status)"
        }
    }
}
