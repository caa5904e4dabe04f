import SettleBase
import SettleModel
import SettleConfig

/// The JSON document the delivery hook receives (SPEC section 5). Built only from facts
/// persisted in the ledger, so a re-delivery after a crash sends the same document; on a
/// shared (PostgreSQL) ledger it also carries the claim's `fencing_token`, which only grows
/// from one claim to the next, so a receiver may refuse a call older than one it has seen.
/// Every document says what it is (`"event": "grant"`; a revoke says `"revoke"`), so a
/// receiver can refuse events it does not know instead of granting them.
package enum HookPayload {
    /// The `event` of a delivery.
    package static let grantEvent = "grant"

    package static func make(order: Order, purchase: VerifiedPurchase, product: Configuration.Product?) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("event", .string(grantEvent)),
            ("store", .string(order.store.rawValue)),
            ("order_id", .string(order.orderId)),
            ("user_id", .string(order.userId)),
            ("product_id", .string(purchase.productId)),
            ("product_type", .string(product?.kind.rawValue)),
            ("quantity", .number(purchase.quantity)),
            ("grant", product?.grant ?? .null),
            ("transaction_id", .string(purchase.transactionId)),
            ("original_transaction_id", .string(purchase.originalTransactionId)),
            ("environment", .string(purchase.environment)),
            ("purchase_date", .string(purchase.purchaseDateMs.map { Timestamp.rfc3339(milliseconds: $0) })),
            ("expires_date", .string(purchase.expiresDateMs.map { Timestamp.rfc3339(milliseconds: $0) })),
            ("idempotency_key", .string(idempotencyKey(purchase))),
        ]
        // The buyer's refunds in 90 days, counted just before this call (issue 37): the backend decides.
        if let refunds = order.refunds90d { members.append(("refunds_90d", .number(refunds))) }
        // A subscription bought in place of another the user holds: the backend ends the old one.
        if let replaced = purchase.replaces { members.append(("replaces", .string(replaced))) }
        if let token = order.fencingToken { members.append(("fencing_token", .number(String(token)))) }
        return .object(members)
    }

    /// The grant key: the Apple transaction id (the original one for a non-consumable), or
    /// Google Play's order id (`GPA.…`); stable across retries and crashes, granted at most once
    /// across the ledger.
    package static func idempotencyKey(_ purchase: VerifiedPurchase) -> String { purchase.grantKey }
}

/// What a delivery attempt concluded.
package enum DeliveryOutcome: Sendable, Equatable {
    /// The goods were granted: the order is finished.
    case delivered
    /// Try again later with backoff (counts as an attempt).
    case retry(String)
    /// The receiver refused for good: a person must look.
    case refused(String)
    /// An answer that looks like success but does not say the goods were granted (a webhook's
    /// 2xx without the key echoed, a batch's exit 0 without the order's line): anything may have
    /// answered, a maintenance page or a proxy. Retried as a failure (counts an attempt); when the
    /// attempts run out, `needs_attention` (`hook_unconfirmed`) rather than `attempts_exhausted`.
    case unconfirmed(String)
    /// The receiver says this purchase was granted before, outside settle (exit 80 / HTTP 409):
    /// recorded as such, and the order moves on to its next candidate or finishes.
    case alreadyGranted(String)
    /// The hook cannot even start (missing, not executable): a configuration fault. Nothing
    /// ran, so no attempt is used; the pass stops until the operator fixes it.
    case cannotStart(String)
}

/// One delivery attempt and what to keep of it in the history.
package struct DeliveryReport: Sendable, Equatable {
    package var outcome: DeliveryOutcome
    /// The hook's exit code (or HTTP status for a webhook), if it had one.
    package var exitCode: Int?
    /// Output kept in the history, already cut to 4 KiB.
    package var output: String
    package var durationMs: Int
    /// The hook ran past its timeout (a command killed, a webhook that did not answer in time).
    package var timedOut = false

    package init(outcome: DeliveryOutcome, exitCode: Int?, output: String, durationMs: Int, timedOut: Bool = false) {
        self.outcome = outcome
        self.exitCode = exitCode
        self.output = output
        self.durationMs = durationMs
        self.timedOut = timedOut
    }
}

/// Grants the goods of verified orders.
package protocol Deliverer: Sendable {
    func deliver(order: Order, purchase: VerifiedPurchase) -> DeliveryReport
    /// How many orders one call of `deliver(batch:)` should get at most.
    var batchSize: Int { get }
    /// Delivers several orders; one report per order, in order.
    func deliver(batch: [(order: Order, purchase: VerifiedPurchase)]) -> [DeliveryReport]
    /// Sends one document of the grant route under `idempotencyKey` and reads the answer as a
    /// delivery's: a transfer's grant, or a grant re-sent (`settle transfer`, `settle redeliver`).
    func send(_ document: JSONValue, orderId: String, idempotencyKey: String) -> DeliveryReport
}

extension Deliverer {
    package var batchSize: Int { 1 }

    /// One delivery after the other: for receivers that take one order a call.
    package func deliver(batch: [(order: Order, purchase: VerifiedPurchase)]) -> [DeliveryReport] {
        batch.map { deliver(order: $0.order, purchase: $0.purchase) }
    }
}

extension DeliveryReport {
    /// The last few lines of a hook's output, where its error usually is, for a log line and
    /// the status view; the history keeps all of it (up to 4 KiB).
    package static func tail(_ output: String, lines: Int = 3, characters: Int = 400) -> String {
        let kept = output.split(separator: "\n", omittingEmptySubsequences: true).suffix(lines).joined(separator: "\n")
        return kept.count > characters ? "…" + String(kept.suffix(characters)) : kept
    }
}
