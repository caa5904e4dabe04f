import SettleModel

/// A stored notification, for `settle status --notification`.
package struct NotificationRecord: Sendable, Equatable {
    package var uuid: String
    package var type: String
    package var subtype: String?
    /// As stored (Apple's spelling), shown as it is.
    package var environment: String
    package var signedDateMs: Int64?
    package var transactionId: String?
    package var orderId: String?
    package var source: String
    package var receivedAt: Int64
    package var outcome: String
    package var detail: String?
}

extension NotificationRecord {
    package init(row: any LedgerRow) {
        self.init(uuid: row.string("uuid") ?? "", type: row.string("type") ?? "", subtype: row.string("subtype"),
                  environment: row.string("environment") ?? "", signedDateMs: row.int("signed_date_ms"),
                  transactionId: row.string("transaction_id"), orderId: row.string("order_id"), source: row.string("source") ?? "",
                  receivedAt: row.int("received_at") ?? 0, outcome: row.string("outcome") ?? "", detail: row.string("detail"))
    }
}
