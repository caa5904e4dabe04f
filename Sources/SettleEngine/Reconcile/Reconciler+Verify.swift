import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// Verification: a claimed order's store is asked about its purchase, and the answer recorded.
extension Reconciler {
    /// Verifies `order` with its store while its lease is renewed, and records the answer; an order
    /// that is now `delivering` is handed off (to the delivery queue, or to the delivery worker
    /// that re-matched it).
    func verify(_ order: Order, pass: Pass, handOff: (DeliveryQueue.Leased) throws -> Void) throws {
        try record(try ask(order, pass: pass), of: order, pass: pass, handOff: handOff)
    }

    /// The store's answer about `order` (asked while its lease is renewed; a refund hold applied),
    /// counted at once for the store's breaker and pace: the next claim already knows of it.
    func ask(_ order: Order, pass: Pass) throws -> Verification {
        let verification = try holdingForRefunds(try askStore(about: order), of: order)
        pass.recordStore(order.store, verification)
        return verification
    }

    /// Records the store's answer about `order`; an order now `delivering` is handed off.
    func record(_ verification: Verification, of order: Order, pass: Pass,
                handOff: (DeliveryQueue.Leased) throws -> Void) throws {
        let now = ledger.time.unixSeconds
        var entry = HistoryEntry(at: now, kind: .verification, outcome: "", appleStatus: verification.appleStatus,
                                 environment: verification.environment, durationMs: verification.durationMs)
        defer { pass.progress() }
        // What the store learned beyond the answer (an Apple Account is the order's user's): its module records it.
        if let learned = verification.learned { try LearnedFacts.record(learned, of: order, in: ledger) }
        switch verification.outcome {
        case let .verified(match):
            entry.outcome = "verified"
            try recordVerified(order, match: match, verification: verification, entry: entry, now: now, pass: pass,
                               handOff: handOff)
        case let .rejected(reason, detail):
            entry.outcome = "rejected"
            entry.detail = "\(reason.rawValue): \(detail)"
            if try ledger.recordRejected(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                         reason: reason.rawValue, detail: detail,
                                         environment: verification.environment, history: entry) {
                log.warning("order.rejected", ["order": order.orderId, "reason": reason.rawValue, "detail": detail,
                                               "apple_status": verification.appleStatus])
                pass.count(.rejected)
            } else {
                leaseLost(order, "rejected")
            }
        case let .needsAttention(reason, detail):
            entry.outcome = "needs_attention"
            entry.detail = "\(reason.rawValue): \(detail)"
            if try ledger.recordNeedsAttention(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                               reason: reason, detail: detail,
                                               environment: verification.environment, history: entry) {
                log.error("order.needs_attention", ["order": order.orderId, "reason": reason.rawValue,
                                                    "detail": detail])
                pass.count(.needsAttention)
            } else {
                leaseLost(order, "needs_attention")
            }
        case .retry, .storeUnavailable, .paced:
            try retryLater(order, after: verification, entry: entry, now: now, pass: pass)
        case let .configurationFault(message):
            // That store stops (its breaker opened in `recordStore`); the other's orders go on.
            try ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
            log.error("\(order.store.logName).configuration_fault", [
                "order": order.orderId, "store": order.store.rawValue, "error": message,
            ])
        }
    }

    /// The store's answer about `order`, asked while the order's lease is renewed. A ledger
    /// failure (renewing the lease) puts the claim back before it is thrown.
    private func askStore(about order: Order) throws -> Verification {
        do {
            // A long history (up to the page cap) may take longer than the lease: renewed like a
            // running hook's, so no other host rescues a verification that is still working.
            let priority = Reconciler.pacerPriority(of: order, now: ledger.time.unixSeconds)
            return try withLeasesRenewed([order], state: .verifying, leaseSeconds: verifyLeaseSeconds) {
                try PacerPriority.$work.withValue(priority) { try Reconciler.verification(of: order, by: verifier) }
            }
        } catch let error as LedgerError {
            try? ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
            throw error
        }
    }

    /// The store confirmed the purchase: the ledger records it against the order (or finds it
    /// granted, delivered or taken already), and an order now `delivering` is handed off.
    private func recordVerified(_ order: Order, match: Match, verification: Verification, entry: HistoryEntry,
                                now: Int64, pass: Pass, handOff: (DeliveryQueue.Leased) throws -> Void) throws {
        let result = try ledger.recordVerified(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                               match: priced(match), deliveryLeaseSeconds: deliveryLeaseSeconds,
                                               history: entry)
        try recorded(result, of: order, verification: verification, now: now, pass: pass, handOff: handOff)
    }

    /// A confirmed purchase whose place among the deliveries its worker kept: its write is
    /// handed to the ledger (the worker goes back to the store at once), and once that write is
    /// durable the order takes its place in the delivery queue, as `record` would have put it.
    /// Whichever thread led the commit follows up; `pass.handedOver` counts those not done.
    func handOver(_ order: Order, match: Match, verification: Verification, pass: Pass) {
        let now = ledger.time.unixSeconds
        let entry = HistoryEntry(at: now, kind: .verification, outcome: "verified", appleStatus: verification.appleStatus,
                                 environment: verification.environment, durationMs: verification.durationMs)
        let answer = VerifiedAnswer(orderId: order.orderId, fence: order.fencingToken, match: priced(match), history: entry)
        pass.handedOver.enter()
        ledger.recordVerified(answer, owner: owner, deliveryLeaseSeconds: deliveryLeaseSeconds) { result in
            var reserved = true
            defer {
                if reserved { pass.deliveries.cancelReservation() }
                pass.progress()
                pass.handedOver.leave()
            }
            do {
                do {
                    try self.recorded(try result.get(), of: order, verification: verification, now: now, pass: pass) { verified in
                        reserved = false
                        pass.deliveries.put(reserved: verified)
                    }
                } catch let error as LedgerError {
                    // A row a backend broke fails its own writes; it must not stop every other order.
                    guard let violation = error.constraintViolation else { throw error }
                    try self.setAside(order, violation: violation, pass: pass)
                }
            } catch {
                pass.fail(error)
            }
        }
    }

    /// What the ledger made of a confirmed purchase, logged and counted; an order now
    /// `delivering` is handed off.
    private func recorded(_ result: VerifiedResult, of order: Order, verification: Verification, now: Int64,
                          pass: Pass, handOff: (DeliveryQueue.Leased) throws -> Void) throws {
        switch result {
        case let .delivering(verified):
            log.info("order.verified", ["order": order.orderId, "transaction": verified.verified?.transactionId,
                                        "environment": verified.verified?.environment,
                                        "apple_status": verification.appleStatus,
                                        "duration_ms": verification.durationMs])
            // Its start is durable: the hook runs on a delivery worker, this one goes back to the store.
            try handOff(DeliveryQueue.Leased(verified, leasedAt: now))
        case let .alreadyGranted(detail):
            log.warning("order.rejected", ["order": order.orderId, "reason": "already_granted", "detail": detail])
            pass.count(.rejected)
        case let .alreadyDelivered(detail):
            log.info("order.finished", ["order": order.orderId, "outcome": "already_delivered", "detail": detail])
            pass.count(.finished)
        case let .deliveredOutside(delivered, detail):
            log.info("order.delivered", ["order": order.orderId, "store": order.store.rawValue,
                                         "outcome": "already_delivered", "detail": detail])
            // No hook: only the store is still to be told.
            if let purchase = delivered.verified { try finishWithStore(delivered, purchase: purchase, pass: pass) }
        case let .rejected(reason, detail):
            log.warning("order.rejected", ["order": order.orderId, "reason": reason.rawValue, "detail": detail])
            pass.count(.rejected)
        case let .grantConflict(message):
            log.error("order.needs_attention", [
                "order": order.orderId, "reason": AttentionReason.grantConflict.rawValue, "error": message,
            ])
            pass.count(.needsAttention)
        case .leaseLost:
            leaseLost(order, "verified")
        }
    }

    /// The store gave no final word (it asked to be asked again, it was unavailable, or settle's
    /// own pace held the call back): the order goes back to pending, due again later.
    private func retryLater(_ order: Order, after verification: Verification, entry: HistoryEntry, now: Int64,
                            pass: Pass) throws {
        var entry = entry
        switch verification.outcome {
        case let .retry(message) where verification.keepsAttempt:
            // Nothing wrong with the order (a Play purchase pending payment, Google unavailable): no attempt used.
            entry.outcome = "wait"
            entry.detail = message
            let delay = policy.appleDelay(retryAfter: verification.retryAfterSeconds)
            let next = Reconciler.nextAttempt(order, now: now, after: delay)
            let state = try ledger.recordFailure(
                orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                countsAttempt: false, permanent: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                environment: verification.environment, history: entry)
            log.info("order.waiting", ["order": order.orderId, "store": order.store.rawValue, "why": message,
                                       "retry_at": Timestamp.rfc3339(unixSeconds: next)])
            if state == nil { leaseLost(order, "wait") }
            pass.count(state)
        case let .retry(message):
            entry.outcome = "retry"
            entry.detail = message
            let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
            let state = try ledger.recordFailure(
                orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                countsAttempt: true, permanent: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                environment: verification.environment, history: entry)
            log.warning("order.verify_failed", ["order": order.orderId, "attempt": order.attempts + 1, "error": message,
                                                "apple_status": verification.appleStatus])
            if state == nil { leaseLost(order, "retry") }
            pass.count(state)
        case let .storeUnavailable(message, retryAfter):
            entry.outcome = "\(order.store.logName)_unavailable"
            entry.detail = message
            let next = Reconciler.nextAttempt(order, now: now, after: policy.appleDelay(retryAfter: retryAfter))
            let state = try ledger.recordFailure(
                orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                countsAttempt: false, permanent: false, nextAttemptAt: next, maxAttempts: policy.maxAttempts,
                environment: verification.environment, history: entry)
            log.warning("\(order.store.logName).unavailable", [
                "order": order.orderId, "store": order.store.rawValue, "error": message,
                "apple_status": verification.appleStatus,
            ])
            if state == nil { leaseLost(order, "retry") }
            pass.count(state)
        case let .paced(message):
            // settle's own pace, not the order's fault nor the store's: the order stays due (no
            // attempt, no backoff), and this pass claims no more of its store's orders.
            entry.outcome = "paced"
            entry.detail = message
            let state = try ledger.recordFailure(
                orderId: order.orderId, owner: owner, fence: order.fencingToken, from: .verifying, error: message,
                countsAttempt: false, permanent: false, nextAttemptAt: min(order.nextAttemptAt, now),
                maxAttempts: policy.maxAttempts, environment: verification.environment, history: entry)
            log.info("order.paced", ["order": order.orderId, "store": order.store.rawValue, "why": message])
            if state == nil { leaseLost(order, "paced") }
            pass.count(state)
        case .verified, .rejected, .needsAttention, .configurationFault:
            // The store's final words, and a fault of its configuration: `verify` records them.
            break
        }
    }

    /// What a pass (or a dry run) concludes about a claimed order. An order naming no user is
    /// never verified nor delivered, whoever wrote the row: a person names the buyer first.
    package static func verification(of order: Order, by verifier: any OrderVerifier) throws -> Verification {
        guard !order.userId.isBlank else {
            return Verification(outcome: .needsAttention(
                reason: .unclaimedPurchase,
                detail: "the order names no user (user_id is empty): settle never verifies or delivers "
                    + "a purchase for nobody; find the buyer and run: "
                    + "settle assign \(Verdict.shellWord(order.orderId)) --user USER_ID"))
        }
        var verification = try verifier.verify(order)
        verification.outcome = classify(verification.outcome, of: order)
        return verification
    }

    /// Only the store's final word rejects a paid order. A product missing from `products` is a gap
    /// on settle's side: `needs_attention`. And an order that holds its grant loses it only on
    /// positive evidence, the store refunding or revoking the purchase: any other rejection of such
    /// an order (a transient "not found", a proof that no longer lists it) is not the store's final
    /// word on a purchase it confirmed: "not found" is retried (attempts end in
    /// `needs_attention`), the rest goes to a person.
    package static func classify(_ outcome: VerificationOutcome, of order: Order) -> VerificationOutcome {
        guard case let .rejected(reason, detail) = outcome else { return outcome }
        if reason == .unknownProduct {
            let retry = "settle retry \(Verdict.shellWord(order.orderId))"
            return .needsAttention(reason: .unknownProduct, detail: "\(detail): add it to products, then \(retry)")
        }
        guard let held = order.verified, reason != .refunded else { return outcome }
        if reason == .transactionNotFound {
            return .retry("\(detail); the order holds purchase \(held.transactionId), which \(order.store.owner) "
                              + "confirmed before: retrying")
        }
        return .needsAttention(
            reason: .grantConflict,
            detail: "the order holds purchase \(held.transactionId), which \(order.store.owner) confirmed before, and "
                + "\(order.store.owner)'s answer now says \(reason.rawValue): \(detail); only a refund or revocation "
                + "takes a held purchase away")
    }
}
