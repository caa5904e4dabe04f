import SettleBase

/// What an order's verdict needs beyond the order's own row: its store's health (an open
/// breaker holds the order whatever the order says), the delivery hook's last words for it,
/// and the transfers and redeliveries support asked for. `settle status ORDER` (text and
/// JSON), `/api/orders/ID` and the order page all read it once and build the one verdict.
package struct VerdictContext: Sendable, Equatable {
    /// The order's store while its breaker is open.
    package struct Outage: Sendable, Equatable {
        /// When the breaker last opened (its cool-down's start), if known.
        package var openedAt: Int64?
        /// When a pass may probe the store again.
        package var probeAt: Int64?
        package var error: String?
        /// Open because settle's own configuration for the store is wrong, not the store.
        package var configurationFault: Bool

        package init(openedAt: Int64?, probeAt: Int64?, error: String?, configurationFault: Bool) {
            (self.openedAt, self.probeAt, self.error, self.configurationFault) = (openedAt, probeAt, error, configurationFault)
        }
    }

    package var outage: Outage?
    /// The last line the hook said (its stderr, or the webhook's body) on the order's last failed delivery.
    package var hookSaid: String?
    package var supportActions: [SupportAction]

    package init(outage: Outage? = nil, hookSaid: String? = nil, supportActions: [SupportAction] = []) {
        (self.outage, self.hookSaid, self.supportActions) = (outage, hookSaid, supportActions)
    }

    package static let none = VerdictContext()
}

extension Verdict {
    /// The verdict with what the order's row cannot tell: a store that is not answering, the
    /// hook's last words, a transfer. Every view builds its verdict here.
    package init(_ order: Order, now: Int64, context: VerdictContext) {
        self.init(order, now: now)
        let id = Verdict.shellWord(order.orderId)
        let owner = order.store.owner
        if let outage = context.outage, Verdict.waitsForTheStore(order) {
            let since = outage.openedAt.map { " since \(Timestamp.relative($0, now: now))" } ?? ""
            let error = outage.error.map { ": \($0)" } ?? ""
            let probe = outage.probeAt.map { $0 > now ? "at \(Timestamp.relative($0, now: now))"
                : "at the next pass (its cool-down ended \(Timestamp.age(now.saturatingSubtracting($0))) ago)" } ?? "at the next pass"
            if outage.configurationFault {
                why = "settle's configuration for \(owner) is wrong\(since)\(error); nothing of \(owner)'s is tried until it is fixed"
                next = "fix the configuration (settle check-config names the fault), then reload settle (systemctl reload settle): "
                    + "the probe goes through at once; this order goes on by itself after that"
            } else {
                why = "\(owner) unavailable\(since)\(error); settle uses no attempt of this order while \(owner) is not answering"
                next = "nothing: settle probes \(owner) \(probe); this order is tried once \(owner) answers "
                    + "(settle reconcile --order \(id) to try now)"
            }
        }
        if let said = context.hookSaid, Verdict.failedAtTheHook(order) {
            why = (why.map { $0 + "; " } ?? "") + "the hook said: \"\(said)\""
        }
        support = context.supportActions.map { Verdict.supportLine($0, now: now) }.joined(separator: "; ")
        if support?.isEmpty == true { support = nil }
    }

    /// Whether the order waits on its store (to verify it, or to be told it was delivered), so
    /// that an open breaker is why it does not move.
    static func waitsForTheStore(_ order: Order) -> Bool {
        switch order.state {
        case .pending: order.lastError?.hasPrefix(HookFault.cannotStart) != true
        case .delivering: order.deliveredAt != nil
        case .verifying, .finished, .rejected, .needsAttention: false
        }
    }

    /// Whether the order's last step was the hook's and it did not grant.
    static func failedAtTheHook(_ order: Order) -> Bool {
        switch (order.state, order.reason) {
        case (.pending, _): order.verified != nil && order.lastError != nil
        case (.needsAttention, "hook_refused"?), (.needsAttention, "hook_unconfirmed"?), (.needsAttention, "already_granted_unclear"?),
             (.needsAttention, "attempts_exhausted"?): order.verified != nil
        default: false
        }
    }

    /// A transfer or redelivery in one line: "transfer 1 to bob: done 2h ago (asked by alice via web)".
    package static func supportLine(_ action: SupportAction, now: Int64) -> String {
        let what = switch action.kind {
        case .transfer: "transfer \(action.number) from \(action.fromUser ?? "?") to \(action.toUser ?? "?")"
        case .redeliver: "redelivery \(action.number) of \(action.target?.rawValue ?? "?")"
        }
        let state = switch action.state {
        case .done: "done " + (action.doneAt.map { Timestamp.relative($0, now: now) } ?? "")
        case .cancelled: "cancelled (\(action.lastError ?? "the purchase was taken back"))"
        case .pending: "settle is carrying it out (step \(action.step.rawValue), next attempt \(Timestamp.relative(action.nextAttemptAt, now: now)))"
        case .waiting: "waits for a person: \(action.lastError ?? "its attempts ran out")"
        }
        return "\(what): \(state) (asked by \(action.requestedBy))"
    }
}
