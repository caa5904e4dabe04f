import SettleBase
import SettleModel
import SettleLedger

/// The refund policy card of `/users/U`, and its form (`POST /users/U/policy`): support records
/// a customer's consent to share data with the store and the developer's refund preference for
/// them, as `settle customer set` does, with a required note.
///
/// Who reaches it: a signed-in console user. A viewer sees the card and no form, and a viewer's
/// POST is refused (403) and audited; a form from another site, or without this person's CSRF
/// token, is refused before anything is read; a read-only console (`web.actions: false`) refuses
/// every POST. The abuse to fear is an agent talked into marking a refund abuser as consenting or
/// their preference as a full refund: the audit log names the agent and the note, and the
/// customer's record says who set it last. Values outside the fixed choices are refused, never
/// stored; the note is kept as text (escaped wherever it is shown).
enum CustomerPolicyForm {
    /// What a done change says on the customer's page (fixed text: nothing is echoed).
    static let doneMessage = "refund policy recorded"

    static func card(userId: String, _ request: WebRequest, console: WebConsole) throws -> Markup {
        let view = try CustomerPolicyView.read(console.ledger, userId: userId)
        var facts: [(String, String)] = [
            ("consent", view.policy?.consentText ?? "unknown (no record)"),
            ("refund preference", view.preferenceText),
        ]
        if let note = view.policy?.note { facts.append(("note", note)) }
        if let set = view.setText { facts.append(("set by", set)) }
        facts += (view.policy?.problems ?? []).map { ("unusable", $0) }
        facts += view.usage.map { ("usage of \($0.orderId)", CustomerPolicyView.usageLine($0)) }
        var content = WebPage.facts(facts, id: "refund-policy-facts")
        if console.actions && request.allows(.customerSet) {
            let token = console.csrf.token(for: request.operatorName)
            let options = ["", "none"] + RefundPreference.allCases.map(\.rawValue)
            let choices = Markup.join(
                options.map { value -> Markup in
                    "<option value=\"\(value)\">\(value.isEmpty ? "preference unchanged" : value)</option>"
                })
            content =
                content + """
                    <form method="post" action="/users/\(HTML.pathSegment(userId))/policy" class="action" \
                    id="policy-form">\
                    <input type="hidden" name="csrf" value="\(token)">\
                    <select name="consented" aria-label="consent"><option value="">consent unchanged</option>\
                    <option value="yes">consented</option><option value="no">refused</option></select>\
                    <select name="refund_preference" aria-label="refund preference">\(choices)</select>\
                    <input type="text" name="note" placeholder="note (required)" aria-label="policy note">\
                    <button type="submit">Record</button></form>
                    """
        }
        return WebPage.section("Refund policy", id: "refund-policy", content)
    }

    static func perform(userId: String, _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        guard console.actions else {
            return WebPage.problem(
                403, "Actions are off", detail: "this console is read-only (web.actions is false)",
                request: request, console: console)
        }
        guard !request.isCrossSite else { return WebActions.crossSite(request, console: console) }
        guard console.csrf.isValid(request.form["csrf"], for: request.operatorName) else {
            console.log.warning(
                "web.csrf_refused", ["user": request.operatorName, "action": WebAction.customerSet.rawValue])
            return WebPage.problem(
                403, "Form refused",
                detail: "the form has expired or did not come from this console: reload "
                    + "the customer's page and try again", request: request, console: console)
        }
        if let refusal = WebPermission.refusal(.customerSet, subject: userId, request, console: console) {
            return refusal
        }
        var change = CustomerChange()
        switch request.form["consented"] ?? "" {
        case "": break
        case "yes": change.consented = true
        case "no": change.consented = false
        default: return refuse("consent is yes, no or unchanged", request, console: console)
        }
        switch request.form["refund_preference"] ?? "" {
        case "": break
        case "none": change.clearsPreference = true
        case let text:
            guard let preference = RefundPreference(rawValue: text) else {
                return refuse("the refund preference is not one of the form's choices", request, console: console)
            }
            change.refundPreference = preference
        }
        let note = request.form["note"]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !note.isEmpty else {
            return refuse("a note is required: say why (a ticket number)", request, console: console)
        }
        guard note.count <= CustomerLimits.noteCharacters else {
            return refuse(
                "the note is longer than \(CustomerLimits.noteCharacters) characters", request, console: console)
        }
        change.note = note
        guard change.consented != nil || change.refundPreference != nil || change.clearsPreference else {
            return refuse("choose a consent or a refund preference to record", request, console: console)
        }
        let user: String
        do { user = try CustomerInput.userId(userId) } catch {
            return refuse(error.description, request, console: console)
        }
        try console.ledger.setCustomer(user, change, source: .console, by: request.person)
        console.log.info(
            "web.action", ["user": request.operatorName, "action": WebAction.customerSet.rawValue, "customer": user])
        return WebResponse.seeOther("/users/\(HTML.pathSegment(user))?done=policy")
    }

    static func refuse(_ why: String, _ request: WebRequest, console: WebConsole) -> HTTPServerResponse {
        WebPage.problem(409, "Not recorded", detail: why, request: request, console: console)
    }
}
