import SettleBase
import SettleModel
import SettleConfig
import SettleHuawei
import SettleLedger

/// The customer's part of an answer to Huawei's refund review: Huawei asks for a decision, not
/// for data, so only the developer's preference for the customer counts, in place of
/// `huawei.refund_review.delivered`, when every order of the request is that customer's and the
/// customer did not refuse consent: `decline` rejects, `grant_full` approves; `grant_prorated`
/// and `neutral` have no Huawei decision (it refunds all or nothing, and takes no "no
/// preference"), so the operator's decision stands. No usage evidence goes to Huawei.
extension HuaweiNotificationInbox {
    typealias Decision = Configuration.HuaweiConfiguration.RefundReview.Decision

    /// The decision to send for the orders `holders`, and where it came from (for the history).
    func customerDecision(_ holders: [String], global: Decision) throws(LedgerError) -> (decision: Decision, source: String) {
        let configured = (global, "huawei.refund_review.delivered")
        var evidence: [RefundEvidence] = []
        for holder in holders { evidence.append(try ledger.refundEvidence(orderId: holder)) }
        let users = Set(evidence.map(\.userId))
        guard users.count == 1, let user = users.first ?? nil, let preference = evidence.first?.preference else {
            return configured
        }
        switch preference {
        case .decline: return (.reject, "customer \(user)'s refund preference decline")
        case .grantFull: return (.approve, "customer \(user)'s refund preference grant_full")
        case .grantProrated, .neutral:
            return (global, "huawei.refund_review.delivered; customer \(user)'s \(preference.rawValue) has no Huawei decision")
        }
    }
}
