import SettleBase
import SettleModel
import SettleLedger

/// The order actions (`web.actions: true`): the same ledger calls, with the same rules, as
/// `settle retry`, `assign`, `resolve`, `transfer` and `redeliver`, each naming the signed-in operator
/// ("retried by alice via web"). Each is a POST form carrying a CSRF token; a request from
/// another site, or without a valid token, is refused before anything is read or written.
enum WebActions {
    enum Action: String, CaseIterable {
        case retry, assign, resolve, transfer, redeliver, bind

        /// The entry of the role table (`WebAction`) this form is.
        var permission: WebAction {
            switch self {
            case .retry: return .retry
            case .assign: return .assign
            case .resolve: return .resolve
            case .transfer: return .transfer
            case .redeliver: return .redeliver
            case .bind: return .bind
            }
        }
    }

    /// What a done action says on the order's page (a fixed set: nothing from the request is
    /// echoed through the redirect).
    enum Outcome: String {
        case retried, assigned, resolved, transferred, redelivered, bound

        var message: String {
            switch self {
            case .retried: return "retried: pending, due now"
            case .assigned: return "assigned: pending, due now"
            case .resolved: return "resolved"
            case .transferred: return "transfer requested: the next pass revokes it from its user and grants it to the new one"
            case .redelivered: return "redelivery requested: the next pass re-sends it to the hook under its original key"
            case .bound: return "account token bound: pending, due now (the next pass checks the purchase against it)"
            }
        }
    }

    static func perform(_ name: String, orderId: String, _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        guard console.actions else {
            return WebPage.problem(403, "Actions are off", detail: "this console is read-only (web.actions is false)", request: request, console: console)
        }
        guard let action = Action(rawValue: name) else {
            return WebPage.problem(404, "Not found", detail: "no action \(name)", request: request, console: console)
        }
        guard !request.isCrossSite else { return crossSite(request, console: console) }
        guard console.csrf.isValid(request.form["csrf"], for: request.operatorName) else {
            console.log.warning("web.csrf_refused", ["user": request.operatorName, "action": action.rawValue])
            return WebPage.problem(403, "Form refused", detail: "the form has expired or did not come from this console: reload the order's page and try again",
                                   request: request, console: console)
        }
        if let refusal = WebPermission.refusal(action.permission, subject: orderId, request, console: console) {
            return refusal
        }
        let by = request.person
        let note = request.form["note"].flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
        let outcome: Outcome
        do {
            switch action {
            case .retry:
                try console.ledger.retry(orderIds: [orderId], note: note, proof: nil, by: by)
                outcome = .retried
            case .assign:
                guard let user = request.form["user"]?.trimmingCharacters(in: .whitespaces), !user.isEmpty else {
                    return try refuse("the user id to assign the order to is required", orderId: orderId, request, console: console)
                }
                var token: String? = nil
                if let order = try console.ledger.orderRecord(orderId)?.order {
                    token = AssignCommand.tokenToSet(for: order, user: user, configuration: console.configuration)?.token
                }
                try console.ledger.assign(orderId: orderId, userId: user, note: note, accountToken: token, by: by)
                outcome = .assigned
            case .resolve:
                guard let resolution = request.form["as"].flatMap(Resolution.init(rawValue:)) else {
                    return try refuse("choose granted_by_hand or wont_grant", orderId: orderId, request, console: console)
                }
                guard let note else { return try refuse("a note is required: say why (a ticket number)", orderId: orderId, request, console: console) }
                let transaction = request.form["transaction"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
                try console.ledger.resolve(orderIds: [orderId], as: resolution, note: note, transaction: transaction, by: by)
                outcome = .resolved
            case .transfer:
                guard let user = request.form["to_user"]?.trimmingCharacters(in: .whitespaces), !user.isEmpty else {
                    return try refuse("the user to move the purchase to is required", orderId: orderId, request, console: console)
                }
                guard let note else { return try refuse("a note is required: say why (a ticket number)", orderId: orderId, request, console: console) }
                try console.ledger.requestTransfer(orderId: orderId, toUser: user, note: note, by: by)
                outcome = .transferred
            case .redeliver:
                guard let note else { return try refuse("a note is required: say why (a ticket number)", orderId: orderId, request, console: console) }
                guard request.form[redeliverConfirmation] == "yes" else {
                    return try refuse(redeliverWarning + ": tick the box to confirm", orderId: orderId, request, console: console)
                }
                try console.ledger.requestRedelivery(orderId: orderId, note: note, by: by)
                outcome = .redelivered
            case .bind:
                if let refused = try bind(orderId: orderId, note: note, request, console: console) { return refused }
                outcome = .bound
            }
        } catch let error as LedgerError {
            let failure = CommandFailure.from(error)
            guard failure.code == .dataError else { throw error }
            return try refuse(failure.message, orderId: orderId, request, console: console)
        }
        console.log.info("web.action", ["user": request.operatorName, "action": action.rawValue, "order": orderId])
        return WebResponse.seeOther("/orders/\(HTML.pathSegment(orderId))?done=\(outcome.rawValue)")
    }

    /// The field a redelivery's form must carry: the person confirms that the receiver ignores a
    /// key it has already acted on, since the request is sent again under the same key.
    static let redeliverConfirmation = "receiver_is_idempotent"
    static let redeliverWarning = "a redelivery sends the same request again under its original key; a receiver that does not "
        + "ignore a key it has already acted on grants twice"

    static func refuse(_ why: String, orderId: String, _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        try OrderPage.render(orderId: orderId, request, console: console, refusal: why, status: 409)
    }

    static func crossSite(_ request: WebRequest, console: WebConsole) -> HTTPServerResponse {
        console.log.warning("web.cross_site_refused", ["user": request.operatorName])
        return WebPage.problem(403, "Refused", detail: "a form posted from another site is refused", request: request, console: console)
    }

    /// The forms that apply to `order` in its state, each with this operator's CSRF token.
    static func forms(_ order: Order, _ request: WebRequest, console: WebConsole) -> Markup {
        let token = console.csrf.token(for: request.operatorName)
        let base = "/orders/\(HTML.pathSegment(order.orderId))/"
        func form(_ action: Action, _ fields: Markup, _ button: String) -> Markup {
            guard request.allows(action.permission) else { return .empty }
            return """
            <form method="post" action="\(base + action.rawValue)" class="action" id="\(action.rawValue)-form">\
            <input type="hidden" name="csrf" value="\(token)">\(fields)<button type="submit">\(button)</button></form>
            """
        }
        var forms: [Markup] = []
        let closable = order.state == .needsAttention || order.state == .rejected
        // An order with no buyer is refused a retry (it would deliver to nobody): assign comes first.
        let unclaimed = order.reason == AttentionReason.unclaimedPurchase.rawValue
            || order.userId.isBlank
        if closable && !unclaimed {
            forms.append(form(.retry, "<input type=\"text\" name=\"note\" placeholder=\"note (ticket)\" aria-label=\"retry note\">", "Retry"))
        }
        if closable {
            // No resolution is preselected: a person chooses granted_by_hand or wont_grant.
            forms.append(form(.resolve, """
                <select name="as" aria-label="resolution" required><option value="" selected disabled>choose…</option>\
                <option value="granted_by_hand">granted_by_hand</option>\
                <option value="wont_grant">wont_grant</option></select>\
                <input type="text" name="note" placeholder="note (required)" aria-label="resolve note">\
                <input type="text" name="transaction" placeholder="transaction (if the order names none)" aria-label="transaction">
                """, "Resolve"))
        }
        if order.state == .needsAttention && order.reason == AttentionReason.unclaimedPurchase.rawValue {
            forms.append(form(.assign, """
                <input type="text" name="user" placeholder="user id" aria-label="user id">\
                <input type="text" name="note" placeholder="note" aria-label="assign note">
                """, "Assign"))
        }
        if let bind = bindForm(order) { forms.append(form(.bind, bind, "Bind")) }
        if order.state == .finished {
            forms.append(form(.transfer, """
                <input type="text" name="to_user" placeholder="move to user id" aria-label="transfer to user">\
                <input type="text" name="note" placeholder="note (required)" aria-label="transfer note">
                """, "Transfer"))
        }
        if order.state == .finished || order.refund != nil {
            forms.append(form(.redeliver, """
                <input type="text" name="note" placeholder="note (required)" aria-label="redeliver note">\
                <label><input type="checkbox" name="\(redeliverConfirmation)" value="yes" required> \(redeliverWarning); \
                ours does (it was told the key and deduplicates on it)</label>
                """, "Redeliver"))
        }
        let applicable = forms.count
        forms = forms.filter { $0 != .empty }
        if applicable > 0 && forms.isEmpty {
            return WebPage.section("Actions", id: "actions", """
                <p class="muted">the actions on a \(order.state.rawValue) order need another role; \
                yours is \(request.role.rawValue)</p>
                """)
        }
        guard !forms.isEmpty else {
            return WebPage.section("Actions", id: "actions", "<p class=\"muted\">no action applies to a \(order.state.rawValue) order</p>")
        }
        return WebPage.section("Actions (as \(request.operatorName) via web)", id: "actions", Markup.join(forms))
    }
}
