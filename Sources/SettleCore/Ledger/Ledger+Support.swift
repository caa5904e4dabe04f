import Foundation

/// What support does to orders settle could not settle by itself: hand them back to the
/// machine (`retry`) or close them by hand (`resolve`). Both only ever start from
/// `needs_attention` or `rejected`, and both are all or nothing.
extension Ledger {
    /// Puts `needs_attention` or `rejected` orders back to `pending`, due now, attempts reset.
    /// With `proof`, the one named order gets it as its proof; the previous proof stays in the
    /// ledger (a receipt by its hash in `receipts`, a signed transaction in the history row).
    @discardableResult
    public func retry(orderIds: [String], note: String?, proof: ReplacementProof? = nil) throws(LedgerError) -> [RetriedOrder] {
        guard proof == nil || orderIds.count == 1 else {
            throw .invalid("a new proof belongs to one order; name exactly one order with --receipt-file or --signed-transaction-file")
        }
        let now = time.unixSeconds
        return try locked { () throws(LedgerError) in
            try write {
                var retried: [RetriedOrder] = []
                for id in orderIds {
                    let order = try closable(id, doing: "retried")
                    try Resolution.checkRetryable(order)
                    var detail = note ?? "from \(order.state.rawValue)"
                    var unchanged = true
                    switch proof {
                    case let .receipt(receipt)?:
                        let hash = SHA256.hex(Data(receipt.utf8))
                        unchanged = hash == order.receiptSHA256
                        try database.query("INSERT OR IGNORE INTO receipts(sha256, data, created_at) VALUES (?, ?, ?)",
                                           [.text(hash), .text(receipt), .integer(now)])
                        try database.query("UPDATE orders SET receipt_sha256 = ? WHERE order_id = ?", [.text(hash), .text(id)])
                        detail += "\nnew proof: receipt sha256 \(hash)"
                            + (order.receiptSHA256.map { "; previous receipt sha256 \($0) (kept in receipts)" } ?? "")
                    case let .signedTransaction(jws)?:
                        unchanged = jws == order.signedTransaction
                        // The replaced proof is kept where receipts are, by hash: the history names
                        // it, and status never prints a proof whole.
                        let previous = order.signedTransaction.map { SHA256.hex(Data($0.utf8)) }
                        if let old = order.signedTransaction, let previous {
                            try database.query("INSERT OR IGNORE INTO receipts(sha256, data, created_at) VALUES (?, ?, ?)",
                                               [.text(previous), .text(old), .integer(now)])
                        }
                        try database.query("UPDATE orders SET signed_transaction = ? WHERE order_id = ?", [.text(jws), .text(id)])
                        detail += "\nnew proof: signed transaction sha256 \(SHA256.hex(Data(jws.utf8)))"
                            + (previous.map { "; previous signed transaction sha256 \($0) (kept in receipts)" } ?? "")
                    case nil:
                        break
                    }
                    try database.query("""
                        UPDATE orders SET state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL,
                               last_error = NULL, finished_at = NULL, updated_at = ? WHERE order_id = ?
                        """, [.integer(now), .integer(now), .text(id)])
                    try appendHistory(id, HistoryEntry(at: now, kind: .retry, outcome: "retried", detail: detail))
                    retried.append(RetriedOrder(orderId: id, previousState: order.state, previousReason: order.reason,
                                                proofUnchanged: unchanged, transactionId: order.transactionId))
                }
                return retried
            }
        }
    }

    /// Closes `needs_attention` or `rejected` orders by hand, with the person's note. An order
    /// that holds Apple's grant and was granted by hand is `finished` (its grant stays, so the
    /// purchase is never granted again); any other granted by hand has its purchase recorded as
    /// granted outside settle (its transaction, or `transaction` when it names none), so the
    /// same purchase uploaded again is never delivered, and is `rejected`. The reason is the
    /// resolution, the note its last error, and the history says who decided: a person.
    @discardableResult
    public func resolve(orderIds: [String], as resolution: Resolution, note: String,
                        transaction: String? = nil) throws(LedgerError) -> [(String, OrderState)] {
        let now = time.unixSeconds
        try Resolution.checkHandTransaction(transaction, orders: orderIds.count, resolution: resolution)
        return try locked { () throws(LedgerError) in
            try write {
                var resolved: [(String, OrderState)] = []
                for id in orderIds {
                    let order = try closable(id, doing: "resolved")
                    let holdsGrant = try !database.query("SELECT 1 FROM grants WHERE order_id = ?", [.text(id)]).isEmpty
                    let state: OrderState = resolution == .grantedByHand && holdsGrant && order.verified != nil ? .finished : .rejected
                    var recorded = ""
                    if resolution == .grantedByHand && !holdsGrant {
                        let purchase = try Resolution.handGrant(order, transaction: transaction)
                        switch try holderOf(purchase) {
                        case let .order(holder)?:
                            throw LedgerError.invalid(Resolution.heldByOrder(purchase, holder: holder, resolving: id))
                        case .outside?:
                            recorded = "; transaction \(purchase.transactionId) was already recorded as granted outside settle"
                        case nil:
                            try database.query("""
                                INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note) VALUES (?, ?, NULL, 'outside', ?, ?)
                                """, [.text(purchase.grantKey), .text(purchase.transactionId), .integer(now),
                                      .text(Resolution.handGrantNote(id, note: note))])
                            recorded = "; transaction \(purchase.transactionId) recorded as granted outside settle"
                        }
                    }
                    try finalize(id, state: state, reason: resolution.rawValue, error: note, environment: nil, now: now)
                    // The history's kinds are fixed by the schema: a person's decision is recorded
                    // as `retry`, the kind of every support action, with its own outcome.
                    try appendHistory(id, HistoryEntry(at: now, kind: .retry, outcome: "resolved_\(resolution.rawValue)",
                                                       detail: "from \(order.state.rawValue)"
                                                           + (order.reason.map { " (\($0))" } ?? "") + ": \(note)" + recorded))
                    resolved.append((id, state))
                }
                return resolved
            }
        }
    }

    /// The order, if a person may retry or resolve it; otherwise the whole request is refused.
    private func closable(_ id: String, doing verb: String) throws -> Order {
        guard let row = try database.query("SELECT * FROM orders WHERE order_id = ?", [.text(id)]).first else {
            throw LedgerError.invalid("no order \(id) in the ledger")
        }
        let order = Order(row: row)
        guard order.state == .needsAttention || order.state == .rejected else {
            throw LedgerError.invalid("order \(id) is \(order.state.rawValue); only needs_attention or rejected orders can be \(verb)")
        }
        return order
    }
}
