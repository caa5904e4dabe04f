import SettleBase
import SettleModel
import SettleLedger
import SettleAppStore
import SettleEngine

/// What linking an `appTransactionId` to a user did.
package struct AppTransactionLink: Sendable, Equatable {
    /// False when the id was already linked to this user.
    package var created: Bool
    /// Other users the same id is linked to: one Apple Account signed in to several of the app's
    /// accounts. Its purchases then bind to none of them by this id (a person decides).
    package var otherUsers: [String]
    /// Unclaimed orders of the account's purchases that the link gave to the user: pending,
    /// due now, verified like any order (the binding checks the link again).
    package var assigned: [String] = []
}

/// How many granted orders `settle link` reads at a time while it looks for evidence of whose
/// Apple Account an id is.
enum AppTransactionEvidence {
    static let page = 256
}

/// Who an Apple Account is, written once for both engines: each `appTransactionId` a verified
/// AppTransaction linked to a user. Only verified AppTransactions are ever linked (the callers
/// check Apple's signature, bundle and environment first), never a bare id.
extension TransactionalLedger {
    @discardableResult
    package func linkAppTransaction(_ app: AppTransaction, userId: String, source: String,
                                    orderId: String?) throws(LedgerError) -> AppTransactionLink {
        let now = time.unixSeconds
        return try writing { db in try db.linkAppTransaction(app, userId: userId, source: source, orderId: orderId, now: now) }
    }

    package func linkedUsers(appTransactionIds ids: [String]) throws(LedgerError) -> LinkedAppTransactions {
        try reading { db in try db.linkedUsers(ids) }
    }
}

extension LedgerTransaction {
    func linkAppTransaction(_ app: AppTransaction, userId: String, source: String, orderId: String?,
                            now: Int64) throws -> AppTransactionLink {
        if source == "link", let buyer = try buyerOfAccount(app.appTransactionId, other: userId) {
            // Whoever presents a signed AppTransaction first must not win: the ledger already shows
            // whose Apple Account this is, through purchases settle granted under its token binding.
            throw LedgerError.invalid("appTransactionId \(app.appTransactionId) is the Apple Account of user \(buyer.user): settle "
                                      + "granted its purchase \(buyer.orderId) to them; it is not linked to user \(userId), and its "
                                      + "unclaimed purchases wait for a person (settle assign ORDER --user USER_ID once you know whose)")
        }
        let inserted = try query("""
            INSERT INTO app_transactions(app_transaction_id, user_id, environment, source, order_id, learned_at)
            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app_transaction_id, user_id) DO NOTHING RETURNING user_id
            """, [.text(app.appTransactionId), .text(userId), .text(app.environment.rawValue), .text(source), .from(orderId),
                  .integer(now)])
        let others = try linkedUsers([app.appTransactionId])[app.appTransactionId, default: []].subtracting([userId])
        var link = AppTransactionLink(created: !inserted.isEmpty, otherUsers: others.sorted())
        if others.isEmpty { link.assigned = try assignUnclaimed(of: app.appTransactionId, to: userId, now: now) }
        return link
    }

    /// A user other than `other` whose granted App Store order's signed transaction names
    /// `appTransactionId`: the ledger's evidence of whose Apple Account it is. Read when a person
    /// links an account by hand (`settle link`), a rare command: the granted orders that carry a
    /// signed transaction, read a page at a time in the order of their ids (the key's own index),
    /// so that a ledger of a million orders is never one array in memory. The scan runs in the
    /// link's transaction, so no grant made meanwhile escapes it.
    private func buyerOfAccount(_ appTransactionId: String, other: String) throws -> (user: String, orderId: String)? {
        var after = ""
        while true {
            // `store || ''` keeps the planner on the order ids' index, in their order (the store's
            // index would sort every page anew).
            let rows = try query("""
                SELECT o.order_id, \(OrderBuyer.column) AS buyer, o.signed_transaction FROM orders o
                WHERE o.order_id > ? AND o.store || '' = 'app_store' AND o.signed_transaction IS NOT NULL AND o.user_id <> ''
                  AND \(OrderBuyer.verified)
                ORDER BY o.order_id LIMIT \(AppTransactionEvidence.page)
                """, [.text(after)])
            for row in rows {
                guard let buyer = row.string("buyer"), buyer != other, let orderId = row.string("order_id"),
                      row.string("signed_transaction").flatMap(Order.appTransactionId(namedIn:)) == appTransactionId else { continue }
                return (buyer, orderId)
            }
            guard rows.count == AppTransactionEvidence.page, let last = rows.last?.string("order_id") else { return nil }
            after = last
        }
    }

    /// Apple reported purchases of this account before anyone knew whose it is: each waits as
    /// `unclaimed_purchase`. The link names the buyer, as `settle assign` would. Settle's own
    /// rows only (`apple_notification`), found by their signed transaction's `appTransactionId`,
    /// a lookup key: the pass verifies the transaction again, and its binding checks the link.
    private func assignUnclaimed(of appTransactionId: String, to userId: String, now: Int64) throws -> [String] {
        let unclaimed = try query("""
            SELECT order_id, signed_transaction FROM orders
            WHERE state = 'needs_attention' AND reason = ? AND store = 'app_store' AND origin = 'apple_notification'
              AND signed_transaction IS NOT NULL ORDER BY created_at\(dialect.lockRows)
            """, [.text(AttentionReason.unclaimedPurchase.rawValue)])
        var assigned: [String] = []
        for row in unclaimed {
            guard let orderId = row.string("order_id"),
                  row.string("signed_transaction").flatMap(Order.appTransactionId(namedIn:)) == appTransactionId else { continue }
            try query("""
                UPDATE orders SET user_id = ?, state = 'pending', attempts = 0, next_attempt_at = ?, reason = NULL, last_error = NULL,
                       updated_at = ? WHERE order_id = ?
                """, [.text(userId), .integer(now), .integer(now), .text(orderId)])
            try appendHistory(orderId, HistoryEntry(at: now, kind: .assign, outcome: "assigned",
                                                    detail: "to user \(userId): a signed AppTransaction linked the purchase's "
                                                        + "appTransactionId \(appTransactionId) to them"))
            assigned.append(orderId)
        }
        return assigned
    }

    /// The users each id is linked to; an id linked to nobody is absent.
    package func linkedUsers(_ ids: [String]) throws -> LinkedAppTransactions {
        var linked: LinkedAppTransactions = [:]
        for id in Set(ids) {
            let users = try query("SELECT user_id FROM app_transactions WHERE app_transaction_id = ?", [.text(id)])
                .compactMap { $0.string("user_id") }
            if !users.isEmpty { linked[id] = Set(users) }
        }
        return linked
    }
}

/// An order's signed AppTransaction, verified by its pass: its Apple Account is the order's user's.
extension AppStoreModule {
    package static func record(_ learned: any LearnedFact, of order: Order, in ledger: any SettleLedger) throws(LedgerError) {
        guard let app = learned as? AppTransaction else { return }
        try ledger.linkAppTransaction(app, userId: order.userId, source: "order", orderId: order.orderId)
    }
}
