import SettleModel
import SettleLedger

/// Google Play's pending refund reviews as the ledger keeps them: the order a review is about,
/// and what settle answered (or why it answered nothing), recorded on the notification and in
/// that order's history in one write.
extension TransactionalLedger {
    /// The newest order verified as a Google order id (arguments: the id twice): through the two
    /// transaction indexes. `store || ''` keeps SQLite's planner off `orders_store_state`, which
    /// it took for `store = ?` and then read every Play order (251 ms among 500,000, against 1).
    static var playOrderByTransaction: String {
        """
        SELECT order_id FROM orders WHERE store || '' = 'google_play' AND (verified_transaction_id = ? OR transaction_id = ?)
        ORDER BY updated_at DESC, order_id LIMIT 1
        """
    }

    /// The order of the ledger that holds Google order `googleOrderId`'s grant, or else was
    /// verified as it (newest first); nil when none does.
    package func playOrderId(googleOrderId: String) throws(LedgerError) -> String? {
        try reading { db in
            if let holder = try db.query("SELECT order_id FROM grants WHERE (transaction_id = ? OR grant_key = ?) AND order_id IS NOT NULL LIMIT 1",
                                         [.text(googleOrderId), .text(googleOrderId)]).first?.string("order_id") {
                return holder
            }
            return try db.query(Self.playOrderByTransaction, [.text(googleOrderId), .text(googleOrderId)])
                .first?.string("order_id")
        }
    }

    /// Ends a pending refund review's notification with `outcome`, and adds `history` to the order
    /// it is about (when the ledger holds one), in one transaction.
    package func finishPlayRefundReview(messageId: String, outcome: String, detail: String, orderId: String?,
                                        history: HistoryEntry) throws(LedgerError) {
        try writing { db in
            try db.query("UPDATE play_notifications SET state = 'done', outcome = ?, detail = ?, order_id = ? WHERE message_id = ?",
                         [.text(outcome), .text(detail), .from(orderId), .text(messageId)])
            if let orderId { try db.appendHistory(orderId, history) }
        }
    }
}
