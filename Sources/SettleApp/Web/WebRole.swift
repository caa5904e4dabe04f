import SettleBase
import SettleModel
import SettleLedger

/// A console role (`OperatorRole`): viewer < support < admin.
typealias WebRole = OperatorRole

/// Everything the console can do that changes something, with the least role allowed to do it.
/// A new action gets a case here and one call to `WebPermission.refusal` before it acts; the
/// page hides what `request.allows` says no to.
enum WebAction: String, CaseIterable, Sendable {
    case retry, assign, resolve, bind
    /// Asking a store about an order id from the search page (`ConsoleLookups`).
    case lookup
    case transfer, redeliver
    /// Retrying many orders at once (the lead's bulk retry).
    case retryBulk = "retry_bulk"
    /// Recording a customer's refund policy on their page (`CustomerPolicyForm`).
    case customerSet = "customer_set"

    var requiredRole: WebRole {
        switch self {
        case .retry, .assign, .resolve, .bind, .lookup, .customerSet: return .support
        case .transfer, .redeliver, .retryBulk: return .admin
        }
    }
}

extension WebRequest {
    /// Whether the signed-in role may do what `role` may.
    func allows(_ role: WebRole) -> Bool { self.role.allows(role) }

    /// Whether the signed-in role may do `action`.
    func allows(_ action: WebAction) -> Bool { allows(action.requiredRole) }

    /// The person behind the request, as the ledger's history and audit log name them.
    var person: Operator { Operator(name: operatorName, channel: .web, role: role, source: client) }
}

/// The role check every action makes after its CSRF check (so a refusal audited is a person's
/// own attempt, never another site's forged form).
enum WebPermission {
    /// Nil when `request`'s role may do `action`; else the 403 answer, naming the role needed,
    /// with the refusal in the audit log and the console's log.
    static func refusal(_ action: WebAction, subject: String, _ request: WebRequest,
                        console: WebConsole) -> HTTPServerResponse? {
        guard !request.allows(action) else { return nil }
        let needed = action.requiredRole.rawValue
        console.log.warning("web.role_refused", ["user": request.operatorName, "role": request.role.rawValue,
                                                 "action": action.rawValue, "needed": needed])
        console.audit(AuditEntry(request.person, action: action.rawValue, subject: subject,
                                 detail: "needs role \(needed)", outcome: .refused))
        let detail = "\(action.rawValue) needs the role \(needed) or above; you are signed in as "
            + "\(request.operatorName) with the role \(request.role.rawValue). An admin can change your role "
            + "(the third field of your line in web.users_file, or web.roles behind a proxy)"
        return WebPage.problem(403, "Not allowed", detail: detail, request: request, console: console)
    }
}

extension WebConsole {
    /// Writes an audit entry the console makes on its own (a sign-in, a refusal). A read-only
    /// console never writes to the ledger: it logs the entry instead. A failed write is logged,
    /// and the request goes on (the console's log still has it).
    func audit(_ entry: AuditEntry) {
        guard actions else {
            log.info("web.audit", ["user": entry.actor, "action": entry.action, "outcome": entry.outcome.rawValue,
                                   "client": entry.source])
            return
        }
        do {
            try ledger.recordAudit(entry)
        } catch {
            log.error("web.audit_failed", ["user": entry.actor, "action": entry.action, "error": "\(error)"])
        }
    }
}
