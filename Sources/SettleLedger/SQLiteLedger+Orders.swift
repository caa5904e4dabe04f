import Foundation
import SettleModel

/// What stays SQLite's own among the order writes: setting aside rows a backend wrote that
/// SQLite's loose typing let through (the transitions are written once, in
/// `TransactionalLedger+Orders`).
extension SQLiteLedger {
    // MARK: - Rows settle cannot work on

    /// A row a backend wrote with values settle cannot read back as written: a BLOB where text
    /// belongs, or text with a NUL character or bytes that are not UTF-8 (read back, it would
    /// be another string, so statements naming the row by it would miss it or hit another row).
    /// Such a row is never claimed; `quarantineMalformedRows` sets it aside by rowid.
    package static let wellFormed = """
        typeof(order_id) = 'text' AND typeof(user_id) = 'text' AND typeof(product_id) = 'text'
        AND typeof(transaction_id) IN ('text','null') AND typeof(receipt_sha256) IN ('text','null')
        AND typeof(signed_transaction) IN ('text','null') AND typeof(app_account_token) IN ('text','null')
        AND typeof(purchase_token) IN ('text','null') AND settle_clean_text(purchase_token)
        AND settle_clean_text(order_id) AND settle_clean_text(user_id) AND settle_clean_text(product_id)
        AND settle_clean_text(transaction_id) AND settle_clean_text(receipt_sha256)
        AND settle_clean_text(signed_transaction) AND settle_clean_text(app_account_token)
        AND typeof(proof_kind) IN ('text','null') AND typeof(proof) IN ('text','null') AND typeof(proof_key) IN ('text','null')
        AND settle_clean_text(proof_kind) AND settle_clean_text(proof) AND settle_clean_text(proof_key)
        """

    /// How a column of a malformed row reads in its `last_error`.
    private static func describe(_ column: String) -> String {
        "'\(column) ' || CASE WHEN typeof(\(column)) = 'text' AND NOT settle_clean_text(\(column)) "
            + "THEN 'text with a NUL or bytes that are not UTF-8' ELSE typeof(\(column)) END"
    }

    /// Rows in flight that settle did not put there: `verifying` or `delivering` without a whole
    /// claim, or `delivering` without holding the grant row of its purchase (settle reserves it
    /// in the same write that starts a delivery), unless it is delivered and its purchase was
    /// granted outside settle (the store is still to be told). Rescue would otherwise deliver such a row
    /// without Apple ever confirming it.
    package static let inFlightWithoutClaim = """
        state IN ('verifying','delivering') AND (lease_host IS NULL OR lease_start IS NULL OR lease_expires_at IS NULL
            OR (state = 'delivering' AND NOT EXISTS (SELECT 1 FROM grants
                WHERE grants.grant_key = orders.grant_key
                  AND (grants.order_id = orders.order_id OR (orders.delivered_at IS NOT NULL AND grants.order_id IS NULL)))))
        """

    /// Moves every unsettled row settle cannot work on to `needs_attention` (`row_invalid`), by
    /// rowid, so one bad row never stops the pass: rows not well formed, and rows written in
    /// flight without a claim or a grant. Returns a printable id of each.
    package func quarantineMalformedRows() throws(LedgerError) -> [String] {
        let now = time.unixSeconds
        let columns = ["order_id", "user_id", "product_id", "transaction_id", "receipt_sha256", "signed_transaction", "app_account_token",
                       "purchase_token", "proof_kind", "proof", "proof_key"]
        return try locked { () throws(LedgerError) in
            try write {
                let malformed = try database.query("""
                    UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                           last_error = 'a backend wrote this row with values settle cannot read back as written: ' ||
                                        \(columns.map(SQLiteLedger.describe).joined(separator: " || ', ' || "))
                                        || '; rewrite it with plain text values and run settle retry',
                           updated_at = ?, delivered_at = NULL, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                    WHERE state IN ('pending','verifying','delivering') AND NOT (\(SQLiteLedger.wellFormed))
                    RETURNING CASE WHEN typeof(order_id) = 'text' AND settle_clean_text(order_id) THEN order_id ELSE 'rowid ' || rowid END AS id,
                              typeof(order_id) = 'text' AND settle_clean_text(order_id) AS named
                    """, [.integer(now)])
                let unclaimed = try database.query("""
                    UPDATE orders SET state = 'needs_attention', reason = 'row_invalid',
                           last_error = 'this row was written as ' || state || ' without ' ||
                                        CASE WHEN state = 'delivering' AND lease_host IS NOT NULL AND lease_start IS NOT NULL
                                                  AND lease_expires_at IS NOT NULL
                                             THEN 'the grant row settle reserves before any delivery' ELSE 'a claim of settle''s' END ||
                                        ': settle moves orders out of pending itself, after its store confirmed the purchase. ' ||
                                        'Check who wrote it; a backend writes new orders as pending',
                           updated_at = ?, delivered_at = NULL, lease_host = NULL, lease_pid = NULL, lease_start = NULL, lease_expires_at = NULL
                    WHERE \(SQLiteLedger.inFlightWithoutClaim)
                    RETURNING order_id AS id, 1 AS named
                    """, [.integer(now)])
                for row in malformed + unclaimed where row.int("named") == 1 {
                    if let id = row.string("id") {
                        try appendHistory(id, HistoryEntry(at: now, kind: .verification, outcome: "needs_attention",
                                                           detail: "row_invalid: " + (unclaimed.contains { $0.string("id") == id }
                                                                ? "written in flight without a claim or a grant"
                                                                : "a column holds a value settle cannot read back as written")))
                    }
                }
                return (malformed + unclaimed).compactMap { $0.string("id") }
            }
        }
    }

    // MARK: - Private

    /// The lease columns' values of a claim by `owner` until `expiresAt` (`claimNextDue`).
    package func leaseArguments(_ owner: LeaseOwner, expiresAt: Int64) -> [SQLiteValue] {
        [.text(owner.host), .integer(Int64(owner.pid)), .text(owner.leaseStart), .integer(expiresAt)]
    }

    package func appendHistory(_ orderId: String, _ entry: HistoryEntry) throws {
        try SQLiteTransaction(database: database).appendHistory(orderId, entry)
    }
}

extension Order {
    package init(row: some LedgerRow) {
        let verified: VerifiedPurchase? = row.string("verified_transaction_id").map { txn in
            var purchase = VerifiedPurchase(transactionId: txn, originalTransactionId: row.string("original_transaction_id") ?? txn,
                                            productId: row.string("verified_product_id") ?? row.string("product_id") ?? "",
                                            environment: row.string("environment") ?? "", quantity: Int(row.int("quantity") ?? 1),
                                            purchaseDateMs: row.int("purchase_date_ms"), expiresDateMs: row.int("expires_date_ms"),
                                            grantKey: row.string("grant_key"))
            purchase.replaces = row.string("replaces")
            purchase.price = Price(row: row)
            return purchase
        }
        var lease: Lease? = nil
        if let host = row.string("lease_host"), let pid = row.int("lease_pid") {
            lease = Lease(owner: LeaseOwner(host: host, pid: Int32(truncatingIfNeeded: pid), leaseStart: row.string("lease_start") ?? ""),
                          expiresAt: row.int("lease_expires_at") ?? 0)
        }
        self.init(orderId: row.string("order_id") ?? "", userId: row.string("user_id") ?? "",
                  productId: row.string("product_id") ?? "", requestedTransactionId: row.string("transaction_id"),
                  receiptSHA256: row.string("receipt_sha256"), signedTransaction: row.string("signed_transaction"),
                  state: OrderState(rawValue: row.string("state") ?? "") ?? .pending,
                  attempts: row.count("attempts"), nextAttemptAt: row.int("next_attempt_at") ?? 0,
                  reason: row.string("reason"), lastError: row.string("last_error"), environment: row.string("environment"),
                  verified: verified, createdAt: row.int("created_at") ?? 0, updatedAt: row.int("updated_at") ?? 0,
                  finishedAt: row.int("finished_at"), lease: lease, appAccountToken: row.string("app_account_token"),
                  origin: row.string("origin") ?? "backend",
                  refund: row.int("refunded_at").map { Refund(at: $0, kind: row.string("refund_kind") ?? "REFUND",
                                                              reason: row.string("refund_reason")) })
        fencingToken = row.int("fencing_token")
        store = row.string("store").flatMap(Store.init(rawValue:)) ?? .ofUnnamedOrders
        purchaseToken = row.string("purchase_token").flatMap(PurchaseToken.init)
        deliveredAt = row.int("delivered_at")
        appTransaction = row.string("app_transaction")
        storeProof = row.string("proof").map { StoreProof(kind: row.string("proof_kind") ?? "proof", proof: $0, key: row.string("proof_key")) }
    }
}
