import SettleBase

/// An order's story in plain words, first thing in `settle status ORDER_ID`: was the customer
/// charged (as far as Apple confirmed), were the goods delivered, why not, and what to do next
/// — a command support can paste.
package struct Verdict: Sendable, Equatable {
    package var charged: String
    package var delivered: String
    package var why: String?
    package var next: String?
    /// Transfers and redeliveries support asked for (`VerdictContext`), one clause each.
    package var support: String?

    package init(_ order: Order, now: Int64) {
        let id = Verdict.shellWord(order.orderId)
        let store = order.store
        if let verified = order.verified {
            let what = store.mustBeToldOfDelivery ? "order" : "transaction"
            charged = "yes: \(store.owner) confirmed \(what) \(verified.transactionId) (\(verified.environment))"
                + (verified.purchaseDateMs.map { ", bought \(Timestamp.relative($0 / 1000, now: now))" } ?? "")
        } else if order.reason.flatMap(RejectionReason.init(rawValue:)) == .refunded {
            charged = "refunded: \(store.owner) says the purchase was refunded or revoked"
        } else if order.state == .rejected {
            charged = "not confirmed: \(store.owner) did not confirm a purchase for this order"
        } else if order.state == .needsAttention, let answered = Verdict.answeredUnclearly(order.reason, owner: store.owner) {
            charged = answered
        } else {
            charged = "not yet confirmed: settle has not had \(store.owner)'s answer yet"
        }
        switch (order.state, order.reason) {
        case (.finished, Resolution.grantedByHand.rawValue?):
            delivered = "by hand (resolved \(Timestamp.relative(order.updatedAt, now: now)))"
        case (.finished, _):
            delivered = "yes, \(order.finishedAt.map { Timestamp.relative($0, now: now) } ?? "")"
                + (order.reason == "already_delivered" ? " (the backend had already granted it)" : "")
        case (.rejected, Resolution.grantedByHand.rawValue?):
            delivered = "by hand (resolved \(Timestamp.relative(order.updatedAt, now: now)))"
        case (.delivering, _) where order.deliveredAt != nil:
            delivered = "yes, \(Timestamp.relative(order.deliveredAt!, now: now)); \(order.store.owner) not yet told (settle retries it)"
        case (.pending, _), (.verifying, _), (.delivering, _):
            delivered = "not yet"
        default:
            delivered = "no"
        }
        why = Verdict.why(order)
        next = Verdict.next(order, id: id, now: now)
    }

    /// For reasons that quote the store's answer, what it answered: "not yet" would contradict
    /// the "why" below it. Nil for reasons given before the store was heard.
    static func answeredUnclearly(_ reason: String?, owner: String) -> String? {
        switch reason.flatMap(AttentionReason.init(rawValue:)) {
        case .proofUnbound?, .tokenUnverifiable?:
            "unclear: \(owner) answered with a purchase, but settle cannot show it is this buyer's (see why)"
        case .purchaseStateUnclear?: "unclear: \(owner) answered, in a state settle has no rule for (see why)"
        case .historyIncomplete?: "unclear: \(owner) answered only in part (see why)"
        default: nil
        }
    }

    package var lines: [(String, String)] {
        [("charged", charged), ("delivered", delivered)]
            + [("why", why), ("next", next), ("support", support)].compactMap { k, v in v.map { (k, $0) } }
    }

    package static func why(_ order: Order) -> String? {
        switch order.state {
        case .finished:
            return order.reason == Resolution.grantedByHand.rawValue ? "a person granted it by hand: \(order.lastError ?? "")" : nil
        case .pending:
            guard let error = order.lastError else { return order.attempts == 0 ? "waiting for its first pass" : nil }
            if error.hasPrefix(HookFault.cannotStart) {
                // Only an operator can fix this: "settle retries by itself" would be false comfort.
                return "a configuration fault: the delivery hook cannot start (\(error.dropFirst(HookFault.cannotStart.count))); "
                    + "run settle check-config"
            }
            return "the last attempt failed (\(error)); settle retries by itself"
        case .verifying: return "settle is asking \(order.store.owner) right now"
        case .delivering where order.deliveredAt != nil:
            return "the hook delivered it; \(order.store.owner) is not told yet (acknowledge or consume), which settle retries"
                + (order.lastError.map { " (\($0))" } ?? "")
        case .delivering: return "settle is running the delivery hook right now"
        case .rejected, .needsAttention:
            guard let reason = order.reason else { return order.lastError }
            return explanation(reason, store: order.store) + (order.lastError.map { " (\($0))" } ?? "")
        }
    }

    /// What each reason means for the customer, in a support agent's words: the store's own
    /// words where its descriptor has them (`store`'s, else the first registered store's that
    /// does), else the core's.
    package static func explanation(_ reason: String, store: Store? = nil) -> String {
        if let store, let words = store.descriptor.reasons[reason] { return words.explanation }
        return coreExplanation(reason) ?? StoreRegistry.words(for: reason)?.explanation ?? reason
    }

    /// The core's words for a reason every store may give; nil for a store's own reason.
    static func coreExplanation(_ reason: String) -> String? {
        switch reason {
        case "refunded": return "the store refunded or revoked the purchase"
        case "bundle_mismatch": return "the proof is for another app"
        case "product_mismatch": return "the proof is for another product than the order"
        case "unknown_product": return "the product is not in settle's configuration"
        case "already_granted": return "this purchase was already granted to another order"
        case "sandbox_not_accepted": return "a sandbox (test) purchase, and this server does not accept sandbox"
        case "signature_invalid": return "the signed transaction is forged or altered"
        case "environment_mismatch": return "signed data from Xcode or local testing, never accepted"
        case "user_mismatch": return "the purchase belongs to another user (appAccountToken)"
        case "upgraded": return "the subscription was upgraded; the new one is what is granted"
        case "proof_unbound": return "the proof does not say which user bought it"
        case "token_unverifiable": return "the purchase names its buyer (appAccountToken), and the order's user's token is unknown"
        case "attempts_exhausted": return "every attempt failed; settle stopped trying"
        case "hook_refused": return "your delivery hook refused the grant (exit 65 or HTTP 4xx)"
        case "hook_unconfirmed":
            return "your delivery hook answered success without confirming the grant (no idempotency_key or Settle-Granted naming this order's key)"
        case "proof_missing": return "the order's receipt is missing from the ledger"
        case "row_invalid": return "a backend wrote this row with wrong types"
        case "server_api_required": return "only a transaction id, and no server_api is configured to look it up"
        case "receipt_format_unsupported": return "an old iOS 6 receipt, which needs receipt_api"
        case "unclaimed_purchase": return "the order names no user: settle does not know who bought it"
        case "already_granted_unclear": return "the hook said the purchase was granted before, maybe by settle's own earlier call for this order"
        case "store_finish_refused": return "delivered, and the store refused every attempt to acknowledge or consume it"
        case "store_refused": return "the store refused for good to answer about this purchase; nothing was delivered"
        case "repeat_refunder":
            return "the store confirmed the purchase; its buyer reached refunds.hold_after refunds in 90 days, "
                + "so the grant waits for a person"
        case Resolution.grantedByHand.rawValue: return "a person granted it by hand"
        case Resolution.wontGrant.rawValue: return "a person decided not to grant it"
        default: return nil
        }
    }

    package static func next(_ order: Order, id: String, now: Int64) -> String? {
        switch order.state {
        case .finished: return nil
        case .pending where order.lastError?.hasPrefix(HookFault.cannotStart) == true:
            // settle cannot fix its own setup: a person does, then the order goes on.
            return "fix the delivery hook (it cannot start: see the last error; settle check-config names the fault), "
                + "then settle reconcile --order \(id): settle will not get past this by itself"
        case .pending where order.nextAttemptAt <= now:
            // Due already: "tries again … (27s ago)" would promise a past that did not happen.
            return "nothing: settle tries it at its next pass (due since \(Timestamp.age(now.saturatingSubtracting(order.nextAttemptAt)))) "
                + "(settle reconcile --order \(id) to try now)"
        case .pending:
            return "nothing: settle tries again \(Timestamp.relative(order.nextAttemptAt, now: now)) "
                + "(settle reconcile --order \(id) to try now)"
        case .verifying, .delivering: return "nothing: wait for the pass to end"
        case .rejected, .needsAttention:
            if let reason = order.reason, Resolution(rawValue: reason) != nil { return nil }
            if order.reason == AttentionReason.unclaimedPurchase.rawValue || order.userId.isBlank {
                // A retry would deliver to nobody (and is refused): the buyer comes first.
                return "find the buyer, then settle assign \(id) --user USER_ID --note TICKET; "
                    + "or settle resolve \(id) --as wont_grant --note TICKET"
            }
            if let reason = order.reason, let advice = retryAdvice(reason, store: order.store) {
                // A command to paste: the advice's placeholders become this order's id and transaction.
                return advice.replacingOccurrences(of: " ID", with: " \(id)")
                    .replacingOccurrences(of: "TXN", with: order.transactionId.map(shellWord) ?? "TXN")
                    + "; or settle resolve \(id) --as wont_grant --note TICKET"
            }
            return "fix the cause, then settle retry \(id) --note TICKET; or settle resolve \(id) --as granted_by_hand|wont_grant --note TICKET"
        }
    }

    /// For reasons a plain retry reproduces (the store's answer will not change), what would make a
    /// retry worthwhile; nil when a plain retry may well succeed.
    package static func retryAdvice(_ reason: String, store: Store? = nil) -> String? {
        if let store, let advice = store.descriptor.reasons[reason]?.retryAdvice { return advice }
        return coreRetryAdvice(reason) ?? StoreRegistry.words(for: reason)?.retryAdvice
    }

    static func coreRetryAdvice(_ reason: String) -> String? {
        switch reason {
        case "refunded": return "nothing to grant: the store refunded it (a retry is rejected the same way)"
        case "bundle_mismatch", "receipt_invalid", "signature_invalid", "product_mismatch", "environment_mismatch",
             "transaction_not_found", "payload_invalid":
            return "ask the customer for a fresh receipt and attach it: settle retry ID --receipt-file FILE (a plain retry is rejected the same way)"
        case "unknown_product": return "add the product to products in the configuration, then settle retry ID"
        case "already_granted": return "check the order that holds the purchase (settle status --transaction TXN)"
        case "sandbox_not_accepted": return "set accept_sandbox if sandbox purchases should be granted, then settle retry ID"
        case "user_mismatch", "proof_unbound", "upgraded": return "check the customer's account; a plain retry is rejected the same way"
        case "token_unverifiable":
            return "a plain retry ends the same way: take the user's token from your backend "
                + "(never from the purchase), then settle bind ID --app-account-token TOKEN --note TICKET, "
                + "which checks the purchase against it"
        case "already_granted_unclear":
            return "check in the backend whether this order's user got the purchase: if so settle resolve ID --as granted_by_hand "
                + "(a plain retry ends the same way)"
        case "hook_unconfirmed":
            return "check the receiver answers with the key (see the webhook contract) and whether this order's user got the goods: "
                + "if so settle resolve ID --as granted_by_hand, if not settle retry ID"
        case "finished_elsewhere":
            return "check whether the customer got it: if so settle resolve ID --as granted_by_hand; if not, settle retry ID delivers it"
        case "backfilled_purchase":
            return "check whether the app already granted it: if it did, settle resolve ID --as granted_by_hand; if not, settle retry ID delivers it"
        case "repeat_refunder":
            return "its history names the buyer's refunds (the customer's page lists them); "
                + "to grant it anyway, settle retry ID (it is not held again)"
        case "store_refused":
            return "a retry is refused the same way: check the purchase with the customer (a family member's shared purchase "
                + "is granted through the family organizer's own order), then settle resolve ID"
        case "store_finish_refused":
            return "the goods were granted; read the store's answer in the history, fix its cause (the product's type, the service "
                + "account's permissions), then settle retry ID: the idempotent hook answers already granted and settle tells the store again"
        default: return nil
        }
    }

    /// An order id as a shell word, so a suggested command can be pasted.
    package static func shellWord(_ text: String) -> String {
        let plain = text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || "0123456789-_.:@/+".unicodeScalars.contains($0)) }
        return plain && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
