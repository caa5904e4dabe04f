import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleDelivery

/// Carries out support's transfers and redeliveries (`settle transfer`, `settle redeliver`, the
/// web console's actions) at each pass, one step at a time, each step recorded before the next
/// starts: a transfer revokes from the holder through the revoke route (`transfer:ORDER:N:revoke`),
/// then grants to the new user through the grant route (`transfer:ORDER:N:grant`); a redelivery
/// re-sends what settle last finished for the order under its original key. A hook failure is
/// retried with the order backoff; a refusal, or attempts run out, leaves the action waiting for
/// a person with the reason in `settle status ORDER`.
package struct SupportActionRunner: Sendable {
    package let ledger: any SettleLedger
    /// The grant route (`delivery.command` or `delivery.webhook.url`).
    package let grants: any Deliverer
    /// The revoke route; nil when none is configured (the revoke step then waits for one).
    package let revokes: RevokeHook?
    package let products: [String: Configuration.Product]
    package let policy: RetryPolicy
    package let log: Log

    /// Most actions worked in one pass; the rest wait for the next.
    package static let batch = 100
    /// How long a claimed action is this host's: longer than two hook calls take.
    package static let claimSeconds: Int64 = 900

    package init(ledger: any SettleLedger, grants: any Deliverer, revokes: RevokeHook?, products: [String: Configuration.Product],
                policy: RetryPolicy, log: Log) {
        self.ledger = ledger
        self.grants = grants
        self.revokes = revokes
        self.products = products
        self.policy = policy
        self.log = log
    }

    /// Works every due action (of `orderIds` only, when named). Returns how many ended done.
    @discardableResult
    package func run(orderIds: [String] = []) throws(LedgerError) -> Int {
        var done = 0
        for (action, order) in try ledger.claimDueSupportActions(limit: Self.batch, leaseSeconds: Self.claimSeconds, orderIds: orderIds) {
            switch action.kind {
            case .transfer: if try transfer(action, order) { done += 1 }
            case .redeliver: if try redeliver(action, order) { done += 1 }
            }
        }
        return done
    }

    // MARK: - Transfer

    private func transfer(_ claimed: SupportAction, _ order: Order) throws(LedgerError) -> Bool {
        var action = claimed
        let from = action.fromUser ?? order.userId, to = action.toUser ?? ""
        guard let purchase = order.verified else {
            try cancel(action, why: "the order holds no verified purchase", revokeDone: nil)
            return false
        }
        if action.step == .revoke {
            if let refund = order.refund {
                // Not revoked yet: the refund's own revoke takes it back from the holder.
                try cancel(action, why: "the purchase was taken back (\(refund.kind)) before the transfer ran; "
                           + "the refund's revoke takes it back from \(from), nothing is granted to \(to)", revokeDone: nil)
                return false
            }
            guard let revokes else {
                try waitForRoute(action, order)
                return false
            }
            let key = SupportAction.transferKey(orderId: order.orderId, number: action.number, step: .revoke)
            let document = SupportPayload.transferRevoke(order: order, number: action.number, from: from, to: to,
                                                         product: products[purchase.productId])
            guard try ledger.holds(action) else { return leaseLost(action) }
            let report = revokes.send(document, orderId: order.orderId, idempotencyKey: key)
            guard try record(report, of: action, kind: .revoke, done: .revoked, outcome: "transfer_revoked",
                             said: "\(action.name): taken back from \(from) (key \(key))") else { return false }
            log.info("order.transfer_revoked", ["order": order.orderId, "transfer": action.number, "from": from, "idempotency_key": key])
            action.step = .grant
            action.attempts = 0
        }
        guard action.step == .grant else { return false }
        if let refund = order.refund {
            // Revoked already: the refund's own revoke would take the goods from them a second time.
            let revokeKey = SupportAction.transferKey(orderId: order.orderId, number: action.number, step: .revoke)
            try cancel(action, why: "the purchase was taken back (\(refund.kind)) after it was revoked from \(from); nothing is granted to \(to)",
                       revokeDone: "already taken back from \(from) by \(action.name) (key \(revokeKey))")
            return false
        }
        let key = SupportAction.transferKey(orderId: order.orderId, number: action.number, step: .grant)
        let document = SupportPayload.transferGrant(order: order, purchase: purchase, number: action.number, from: from, to: to,
                                                    product: products[purchase.productId])
        guard try ledger.holds(action) else { return leaseLost(action) }
        let report = grants.send(document, orderId: order.orderId, idempotencyKey: key)
        guard try record(report, of: action, kind: .delivery, done: .granted, outcome: "transfer_granted",
                         said: "\(action.name): granted to \(to) (key \(key)); the order is \(to)'s now") else { return false }
        log.info("order.transferred", ["order": order.orderId, "transfer": action.number, "from": from, "to": to, "idempotency_key": key])
        return true
    }

    // MARK: - Redelivery

    private func redeliver(_ action: SupportAction, _ order: Order) throws(LedgerError) -> Bool {
        guard let target = action.target, let key = action.targetKey, let purchase = order.verified else {
            try cancel(action, why: "nothing recorded to re-send", revokeDone: nil)
            return false
        }
        if let refund = order.refund, !target.isRevoke {
            // The refund's transaction cancels it too; this covers a claim read just before it.
            try cancel(action, why: "the purchase was taken back (\(refund.kind)) before the redelivery ran; "
                       + "its \(target.rawValue) is not re-sent", revokeDone: nil)
            return false
        }
        let product = products[purchase.productId]
        var document: JSONValue
        switch target {
        case .grant:
            document = HookPayload.make(order: try withRefundCount(order), purchase: purchase, product: product)
        case .revoke:
            guard let job = try ledger.finishedRevocation(orderId: order.orderId) else {
                try cancel(action, why: "the refund's revoke is no longer in the ledger", revokeDone: nil)
                return false
            }
            document = RevokeHook.payload(order: order, transactionId: job.transactionId, round: job.round, quantity: job.quantity,
                                          revocation: (job.revocationType, job.revocationPercentage), product: product)
        case .transferGrant, .transferRevoke:
            guard let number = action.targetNumber, let transfer = try ledger.transfer(orderId: order.orderId, number: number),
                  let from = transfer.fromUser, let to = transfer.toUser else {
                try cancel(action, why: "the transfer it re-sends is no longer in the ledger", revokeDone: nil)
                return false
            }
            document = target == .transferGrant
                ? SupportPayload.transferGrant(order: order, purchase: purchase, number: number, from: from, to: to, product: product)
                : SupportPayload.transferRevoke(order: order, number: number, from: from, to: to, product: product)
        }
        let route: @Sendable (JSONValue) -> DeliveryReport
        if target.isRevoke {
            guard let revokes else {
                try waitForRoute(action, order)
                return false
            }
            route = { revokes.send($0, orderId: order.orderId, idempotencyKey: key) }
        } else {
            let grants = self.grants
            route = { grants.send($0, orderId: order.orderId, idempotencyKey: key) }
        }
        // The key is the original one, whatever the document was built with.
        if case var .object(members) = document {
            members = members.map { $0.0 == "idempotency_key" ? ($0.0, .string(key)) : $0 }
            document = .object(members)
        }
        guard try ledger.holds(action) else { return leaseLost(action) }
        let report = route(document)
        guard try record(report, of: action, kind: target.isRevoke ? .revoke : .delivery, done: .resent, outcome: "redelivered",
                         said: "\(action.name): re-sent \(target.rawValue) under its original key \(key)") else { return false }
        log.info("order.redelivered", ["order": order.orderId, "redelivery": action.number, "target": target.rawValue, "idempotency_key": key])
        return true
    }

    // MARK: - Recording

    /// Records the hook's answer to a step; true when the step is done.
    private func record(_ report: DeliveryReport, of action: SupportAction, kind: HistoryEntry.Kind, done: SupportStepOutcome,
                        outcome: String, said: String) throws(LedgerError) -> Bool {
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: kind, outcome: outcome, hookExit: report.exitCode, durationMs: report.durationMs,
                                 detail: report.output.isEmpty ? said : said + "\n" + report.output)
        let result: SupportStepOutcome
        switch report.outcome {
        case .delivered, .alreadyGranted:
            // A receiver that dedupes on the key answers a step it has seen as done: so it is.
            result = done
        case let .retry(message), let .cannotStart(message), let .unconfirmed(message):
            let exhausted = action.attempts + 1 >= policy.maxAttempts
            entry.outcome = "\(action.kind.rawValue)_" + (exhausted ? "waiting" : "retry")
            entry.detail = "\(action.name), step \(action.step.rawValue): \(message)" + (exhausted ? "; attempts exhausted, waits for a person" : "")
                + (report.output.isEmpty ? "" : "\n" + report.output)
            result = .failed(message + (exhausted ? " (attempts exhausted)" : ""), waiting: exhausted,
                             nextAttemptAt: now + Int64(policy.delay(afterAttempt: action.attempts + 1)))
            log.warning("order.\(action.kind.rawValue)_failed", ["order": action.orderId, "step": action.step.rawValue,
                                                                 "attempt": action.attempts + 1, "error": message])
        case let .refused(message):
            entry.outcome = "\(action.kind.rawValue)_waiting"
            entry.detail = "\(action.name), step \(action.step.rawValue): \(message); waits for a person"
                + (report.output.isEmpty ? "" : "\n" + report.output)
            result = .failed(message, waiting: true, nextAttemptAt: now)
            log.error("order.\(action.kind.rawValue)_refused", ["order": action.orderId, "step": action.step.rawValue, "error": message])
        }
        let recorded = try ledger.recordSupportStep(action, result, history: entry)
        if !recorded { _ = leaseLost(action) }
        return recorded && result == done
    }

    private func cancel(_ action: SupportAction, why: String, revokeDone: String?) throws(LedgerError) {
        let now = ledger.time.unixSeconds
        try ledger.recordSupportStep(action, .cancelled(why, revokeAlreadyDone: revokeDone),
                                     history: HistoryEntry(at: now, kind: .retry, outcome: "\(action.kind.rawValue)_cancelled",
                                                           detail: "\(action.name): \(why)"))
        log.warning("order.\(action.kind.rawValue)_cancelled", ["order": action.orderId, "why": why])
    }

    /// Never to the grant route: the step waits, due, and runs once a revoke route is configured.
    private func waitForRoute(_ action: SupportAction, _ order: Order) throws(LedgerError) {
        let why = Revoker.noRevokeRoute
        guard action.lastError != why else { return try ledger.releaseSupportAction(action) }
        let now = ledger.time.unixSeconds
        try ledger.recordSupportStep(action, .waitingForRoute(why), history: HistoryEntry(
            at: now, kind: .revoke, outcome: "\(action.kind.rawValue)_waiting", detail: "\(action.name), step \(action.step.rawValue) waits: \(why)"))
        log.error("order.\(action.kind.rawValue)_waiting", ["order": order.orderId, "why": why])
    }

    private func leaseLost(_ action: SupportAction) -> Bool {
        log.warning("order.\(action.kind.rawValue)_lease_lost", ["order": action.orderId, "action": action.name])
        return false
    }
}
