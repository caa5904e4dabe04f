import SettleBase
import SettleModel
import SettleGooglePlay
import SettleLedger
import SettleEngine

/// Google's pending refund reviews (`pendingRefundReviewNotification`), answered with
/// `orders.reviewrefund` under the App Store's consumption answer rule: only from evidence the
/// ledger holds, nothing where it holds none, recorded either way, within Google's 24 hours.
extension PlayNotificationInbox {
    /// How long Google waits for an answer after it asks.
    package static let refundReviewSeconds: Int64 = 86_400

    /// Answers a review when the ledger shows the order delivered (settle finished it, not refunded
    /// since, or a grant of it is recorded outside settle): the configured refund preference and
    /// sample-content statement, and the delivery as one usage event (when, to which account, and
    /// whether settle consumed it with Google). How much of it the customer used is the operator's
    /// knowledge: sent only as the backend recorded it, with the customer's consent, as is their
    /// own preference (+CustomerEvidence). While an order of it is still being settled the review
    /// waits (the notification stays pending: looked at again at the next pass, within the deadline);
    /// when settle does not know, nothing is sent. A failure Google
    /// may recover from is asked again at the next pass, until the deadline. The pending refund
    /// token goes to Google only.
    /// True once the review is recorded (answered, or not and why); false while it waits.
    func refundReview(_ n: PendingRefundReviewNotification, record: PlayNotificationRecord, eventMs: Int64?) throws(LedgerError) -> Bool {
        let now = ledger.time.unixSeconds
        let deadline = (eventMs.map { $0 / 1000 } ?? record.receivedAt).saturatingAdding(Self.refundReviewSeconds)
        let orderId = try ledger.playOrderId(googleOrderId: n.orderId)
        let what = "refund review of Google order \(n.orderId)"
        func notAnswered(_ why: String) throws(LedgerError) -> Bool {
            let detail = "\(what): no answer sent: \(why)"
            try ledger.finishPlayRefundReview(messageId: record.messageId, outcome: "not_answered", detail: detail, orderId: orderId,
                                              history: HistoryEntry(at: now, kind: .consumption, outcome: "not_answered", detail: detail))
            log.warning("google_play.refund_review_not_answered", ["google_order": n.orderId, "order": orderId, "why": why])
            return true
        }
        guard refundReview.respond else { return try notAnswered("google_play.refund_review.respond is off") }
        guard now < deadline else { return try notAnswered("past Google's 24-hour deadline") }
        let delivered: String
        switch try ledger.deliveryEvidence(transactionId: n.orderId) {
        case .inFlight:
            return false
        case let .unknown(why):
            if orderId == nil, awaitsVerification(googleOrderId: n.orderId) { return false }
            return try notAnswered(why)
        case let .delivered(why):
            delivered = why
        }
        // The customer's preference and, with consent, usage evidence (PlayNotificationInbox+CustomerEvidence).
        let (evidence, note) = try withCustomerEvidence(try self.evidence(orderId: orderId, delivered: delivered),
                                                        orderId: orderId)
        guard case let .object(members) = evidence else { return false }
        do throws(PlayAPIError) {
            try client.reviewRefund(orderId: n.orderId, body: .object([("pendingRefundToken", .string(n.pendingRefundToken))] + members))
        } catch {
            guard error.kind == .refused || error.kind == .purchaseNotFound else {
                // Google or the credentials may recover: the next pass asks again, until the deadline.
                log.warning("google_play.refund_review_deferred", ["google_order": n.orderId, "error": error.description])
                return false
            }
            let detail = "\(what): Google refused the answer: \(error.message)"
            try ledger.finishPlayRefundReview(messageId: record.messageId, outcome: "failed", detail: detail, orderId: orderId,
                                              history: HistoryEntry(at: now, kind: .consumption, outcome: "failed", detail: detail))
            log.error("google_play.refund_review_failed", ["google_order": n.orderId, "order": orderId, "error": error.message])
            return true
        }
        let detail = "\(what): \(evidence.serialized())" + (note.isEmpty ? "" : " (\(note))")
        try ledger.finishPlayRefundReview(messageId: record.messageId, outcome: "answered", detail: detail, orderId: orderId,
                                          history: HistoryEntry(at: now, kind: .consumption, outcome: "answered", detail: detail))
        log.info("google_play.refund_review_answered", ["google_order": n.orderId, "order": orderId, "body": evidence.serialized()])
        return true
    }

    /// Whether an order of the ledger holds the purchase behind `googleOrderId` (its token, from
    /// `orders.get`) and is still being settled, unverified: the review waits for it. Google not
    /// answering counts as yes (the deadline still ends the wait); Google knowing no such order, as no.
    private func awaitsVerification(googleOrderId: String) -> Bool {
        do {
            let token = try client.order(googleOrderId).purchaseToken
            return try ledger.playOrders(token: token).contains { order in
                order.verified == nil && [.pending, .verifying, .delivering].contains(order.state)
            }
        } catch let error as PlayAPIError {
            return error.kind != .purchaseNotFound
        } catch {
            return false
        }
    }

    /// The answer's body but for the pending refund token: what the history records.
    private func evidence(orderId: String?, delivered: String) throws(LedgerError) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("refundPreference", .string(refundReview.refundPreference.rawValue)),
            ("sampleContentProvided", .bool(refundReview.sampleContentProvided)),
        ]
        guard let orderId, let record = try ledger.orderRecord(orderId) else { return .object(members) }
        let order = record.order
        var event: [(String, JSONValue)] = []
        if let at = order.deliveredAt ?? order.finishedAt { event.append(("consumptionTime", .string(Timestamp.rfc3339(unixSeconds: at)))) }
        if let account = PlayVerifier.expectedAccountId(binding, order) { event.append(("obfuscatedAccountId", .string(account))) }
        let consumed = record.history.contains { $0.outcome == "consumed" }
        event.append(("consumptionItemDescription", .string(
            "\(order.productId) granted to the buyer's account by the developer's server (\(delivered))"
                + (consumed ? "; consumed with Google Play after the grant" : ""))))
        members.append(("consumptionUsageEvents", .array([.object(event)])))
        return .object(members)
    }
}
