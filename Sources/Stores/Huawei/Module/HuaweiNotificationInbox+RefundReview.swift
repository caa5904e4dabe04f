import Foundation
import SettleBase
import SettleModel
import SettleHuawei
import SettleLedger
import SettleEngine

/// Huawei's refund reviews (`REFUND_REQUEST`): the developer decides, and settle decides only
/// from evidence, only when the operator turned answering on (`huawei.refund_review`): when the
/// ledger shows every order of the request delivered, it sends the operator's decision for
/// delivered goods; when it cannot show that (no order, one refunded, one it does not hold),
/// it sends nothing and says why: "I don't know" is no answer. An order still being settled
/// is waited for, for a day.
extension HuaweiNotificationInbox {
    /// How long a refund review waits for its orders to be settled before it is left to a person.
    static let refundReviewWaitSeconds: Int64 = 86_400

    func refundRequest(_ json: JSONValue, record: HuaweiNotificationRecord) throws(LedgerError) -> Step {
        guard let request = HuaweiRefundRequest(notification: json) else {
            return .finished(
                ("unreadable", "a refund request without its batch number and orders", nil), answered: false)
        }
        let what =
            "refund review \(request.refundBatchNo) of \(request.orders.map(\.purchaseOrderId).joined(separator: ", "))"
        var holders: [String] = []
        for order in request.orders {
            let probe = VerifiedPurchase(
                transactionId: order.purchaseOrderId, originalTransactionId: order.purchaseOrderId, productId: "",
                environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)
            if case let .order(id)? = try ledger.grantHolder(of: probe) { holders.append(id) }
        }
        let firstOrder = holders.first
        func notAnswered(_ why: String) throws(LedgerError) -> Step {
            let detail = "\(what): no answer sent: \(why); decide it in AppGallery Connect"
            try note(holders, outcome: "not_answered", detail: detail)
            log.warning("huawei.refund_review_not_answered", ["batch": request.refundBatchNo, "why": why])
            return .finished(("not_answered", detail, firstOrder), answered: false)
        }
        guard refundReview.respond, let configured = refundReview.delivered else {
            return try notAnswered("huawei.refund_review.respond is off")
        }
        var evidence: [String] = []
        for order in request.orders {
            switch try ledger.deliveryEvidence(transactionId: order.purchaseOrderId) {
            case let .delivered(why):
                evidence.append(why)
            case let .inFlight(why):
                guard ledger.time.unixSeconds.saturatingSubtracting(record.receivedAt) < Self.refundReviewWaitSeconds
                else {
                    return try notAnswered("\(why), for a day")
                }
                return .waiting
            case let .unknown(why):
                return try notAnswered(why)
            }
        }
        let (decision, source) = try customerDecision(holders, global: configured) // +CustomerEvidence
        let approve = decision == .approve
        let remark = "delivered: " + evidence.joined(separator: "; ")
        let body = request.answer(
            approve: approve, remark: remark, applicationId: verifier.appId,
            nowMs: ledger.time.unixSeconds.saturatingMultiplied(by: 1000))
        switch verifier.client.refundResult(body, batch: request.refundBatchNo) {
        case .success:
            let detail = "\(what): answered \(decision.rawValue) (\(source)), \(remark)"
            try note(holders, outcome: "answered_\(decision.rawValue)", detail: detail)
            log.info("huawei.refund_review_answered", ["batch": request.refundBatchNo, "decision": decision.rawValue])
            return .finished(("answered_\(decision.rawValue)", detail, firstOrder), answered: true)
        case let .failure(failure):
            switch failure.kind {
            case .refused, .notFound:
                let detail = "\(what): Huawei refused the answer: \(failure.message)"
                try note(holders, outcome: "failed", detail: detail)
                return .finished(("failed", detail, firstOrder), answered: true)
            default:
                return .storeFailed(failure)
            }
        }
    }

    /// Tells each order's history what became of the review.
    private func note(_ orders: [String], outcome: String, detail: String) throws(LedgerError) {
        let now = ledger.time.unixSeconds
        try ledger.writing { db in
            for order in orders {
                try db.appendHistory(order, HistoryEntry(at: now, kind: .consumption, outcome: outcome, detail: detail))
            }
        }
    }
}
