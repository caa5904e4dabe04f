import SettleBase
import SettleModel
import SettleLedger
import SettleEngine

extension TransactionalLedger {
    /// Pending rows a backend wrote under an id settle keeps for Apple's notifications
    /// (`apple-...`, with no notification behind it): `needs_attention` (`row_invalid`), never
    /// verified, so they cannot squat the order a notification of that purchase creates.
    package func quarantineReservedOrderIds() throws(LedgerError) -> [String] {
        let now = time.unixSeconds
        let reserved = try hasNotificationTables()
            ? "AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.order_id = orders.order_id)" : ""
        return try writing { db in
            let ids = try db.query("""
                UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                       last_error = 'order ids starting with apple- are settle''s own, for purchases Apple reports; '
                                    || 'enqueue this order under an id of the backend''s and resolve this one', updated_at = ?
                WHERE state = 'pending' AND \(db.dialect.isText("order_id")) AND substr(order_id, 1, 6) = 'apple-' \(reserved)
                RETURNING order_id
                """, [.integer(now)]).compactMap { $0.string("order_id") }
            for id in ids {
                try db.appendHistory(id, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                      detail: "row_invalid: an order id starting with apple- written by a backend"))
            }
            return ids
        }
    }
}

/// Before each pass's claims, rows a backend wrote under the ids settle keeps for the App Store's
/// notifications are set aside for a person (`StoreModule.tidy`).
extension AppStoreModule {
    package static func tidy(_ ledger: any SettleLedger, log: Log) throws(LedgerError) {
        for id in try ledger.quarantineReservedOrderIds() {
            log.error("order.needs_attention", ["order": id, "reason": AttentionReason.rowInvalid.rawValue,
                                                "why": "reserved order id"])
        }
    }
}
