import SettleModel

/// `settle assign` with the buyer's account token: the token is owed to the order's store once
/// the pass verified the purchase as the user's (the App Store module works the queue).
extension LedgerTransaction {
    /// Owes Apple the token for this order's purchase, due now (it waits for the order's verification).
    func queueAccountToken(_ orderId: String, token: String, now: Int64) throws {
        try query("""
            INSERT INTO account_token_updates(order_id, app_account_token, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (order_id) DO UPDATE SET app_account_token = excluded.app_account_token, state = 'pending', attempts = 0,
                next_attempt_at = excluded.next_attempt_at, apple_status = NULL, last_error = NULL, updated_at = excluded.updated_at
            """, [.text(orderId), .text(token), .integer(now), .integer(now), .integer(now)])
    }
}
