import SettleBase
import SettleModel
import SettleLedger

/// What `settle status ORDER` shows of support's transfers and redeliveries: who asked, which
/// steps are done, the step pending and why it waits.
extension StatusView {
    package static func json(_ action: SupportAction) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("kind", .string(action.kind.rawValue)),
            ("number", .number(action.number)),
            ("state", .string(action.state.rawValue)),
            ("step", .string(action.step.rawValue)),
            ("requested_by", .string(action.requestedBy)),
            ("requested_at", time(action.requestedAt)),
            ("note", .string(action.note)),
        ]
        switch action.kind {
        case .transfer:
            members += [
                ("from_user", .string(action.fromUser)), ("to_user", .string(action.toUser)),
                ("revoke_key", .string(SupportAction.transferKey(orderId: action.orderId, number: action.number, step: .revoke))),
                ("grant_key", .string(SupportAction.transferKey(orderId: action.orderId, number: action.number, step: .grant))),
                ("revoked_at", time(action.revokedAt)), ("granted_at", time(action.grantedAt)),
            ]
        case .redeliver:
            members += [("target", .string(action.target?.rawValue)), ("idempotency_key", .string(action.targetKey)),
                        ("user_id", .string(action.toUser))]
        }
        members += [
            ("done_at", time(action.doneAt)), ("attempts", .number(action.attempts)),
            ("next_attempt_at", action.state == .pending ? time(action.nextAttemptAt) : .null),
            ("last_error", .string(action.lastError)),
        ]
        return .object(members)
    }

    /// The overview's line about transfers and redeliveries waiting for a person; empty when none does.
    static func supportActionsWaitingText(_ summary: LedgerSummary) -> String {
        guard summary.supportActionsWaitingCount > 0 else { return "" }
        let more = summary.supportActionsWaitingCount - summary.supportActionsWaiting.count
        return "support actions waiting for a person: \(summary.supportActionsWaitingCount) ("
            + summary.supportActionsWaiting.map { PrintableText.escape($0) }.joined(separator: ", ")
            + (more > 0 ? " and \(more) more" : "") + "; settle status ORDER says which step and why)\n"
    }

    /// One line or two per action, for a person.
    package static func text(_ actions: [SupportAction], now: Int64) -> String {
        guard !actions.isEmpty else { return "" }
        var out = "\nsupport actions:\n"
        for a in actions {
            var line = "  \(a.name)"
            switch a.kind {
            case .transfer:
                line += " from \(a.fromUser ?? "?") to \(a.toUser ?? "?")"
            case .redeliver:
                line += " of \(a.target?.rawValue ?? "?") (key \(a.targetKey ?? "?"))"
            }
            line += ", requested by \(a.requestedBy) \(Timestamp.relative(a.requestedAt, now: now)): \(a.note)\n    "
            var steps: [String] = []
            if a.kind == .transfer {
                steps.append("revoke " + (a.revokedAt.map { "done \(Timestamp.relative($0, now: now))" } ?? "not done")
                             + " (key \(SupportAction.transferKey(orderId: a.orderId, number: a.number, step: .revoke)))")
                steps.append("grant " + (a.grantedAt.map { "done \(Timestamp.relative($0, now: now))" } ?? "not done")
                             + " (key \(SupportAction.transferKey(orderId: a.orderId, number: a.number, step: .grant)))")
            }
            switch a.state {
            case .done: steps.insert("done \(a.doneAt.map { Timestamp.relative($0, now: now) } ?? "")", at: 0)
            case .cancelled: steps.insert("cancelled: \(a.lastError ?? "")", at: 0)
            case .pending:
                steps.insert("pending at step \(a.step.rawValue), next attempt \(Timestamp.relative(a.nextAttemptAt, now: now)), "
                             + Plural.count(a.attempts, "attempt")
                             + (a.lastError.map { ", last error: \($0)" } ?? ""), at: 0)
            case .waiting:
                steps.insert("WAITING for a person at step \(a.step.rawValue) after "
                             + "\(Plural.count(a.attempts, "attempt")): \(a.lastError ?? "")"
                             + (a.kind == .transfer ? " (fix the hook, then ask for the same transfer again to resume)"
                                                    : " (fix the hook, then settle redeliver again to resume)"), at: 0)
            }
            out += PrintableText.escape(line + steps.joined(separator: "; "), keepingLineBreaks: true) + "\n"
        }
        return out
    }
}
