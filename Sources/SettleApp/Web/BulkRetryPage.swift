import SettleBase
import SettleModel
import SettleLedger

/// `POST /bulk/retry`: the orders a list's form carried (`id.N`, each percent-encoded), first
/// shown for confirmation with their count and a required note, then, confirmed, retried as
/// `settle retry --reason` does (`BulkRetry`: each recorded with the operator, orders changed
/// meanwhile skipped and named). A form from another site or without this operator's CSRF
/// token is refused before anything is read.
enum BulkRetryPage {
    /// At most this many orders a request (two pages' worth); the form of one page carries 50.
    static let limit = 100

    static func perform(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        guard console.actions else {
            return WebPage.problem(403, "Actions are off", detail: "this console is read-only (web.actions is false)",
                                   request: request, console: console)
        }
        guard !request.isCrossSite else { return WebActions.crossSite(request, console: console) }
        guard console.csrf.isValid(request.form["csrf"], for: request.operatorName) else {
            console.log.warning("web.csrf_refused", ["user": request.operatorName, "action": "retry_bulk"])
            return WebPage.problem(403, "Form refused", detail: "the form has expired or did not come from this console: reload the list "
                                   + "and try again", request: request, console: console)
        }
        if let refusal = WebPermission.refusal(.retryBulk, subject: "-", request, console: console) { return refusal }
        let ids = orderIds(request.form)
        guard !ids.isEmpty else {
            return WebPage.problem(400, "Nothing selected", detail: "tick the orders to retry, or use Retry all on this page",
                                   request: request, console: console)
        }
        guard ids.count <= limit else {
            return WebPage.problem(413, "Too many orders", detail: "at most \(limit) orders at once; for more, settle retry --reason",
                                   request: request, console: console)
        }
        guard let state = request.form["state"].flatMap(OrderState.init(rawValue:)), state == .needsAttention || state == .rejected else {
            return WebPage.problem(400, "Not a list", detail: "the form names no list (needs_attention or rejected) its orders came from",
                                   request: request, console: console)
        }
        let reason = request.form["reason"].flatMap { $0.isEmpty ? nil : $0 }
        let listed = Listed(state: state, reason: reason)
        let note = request.form["note"]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard request.form["confirm"] == "yes", !note.isEmpty else {
            return confirmation(ids, listed, missingNote: request.form["confirm"] == "yes", request, console: console)
        }
        let outcome = try BulkRetry.run(console.ledger, orderIds: ids, state: state, reason: reason, note: note,
                                        by: request.person)
        console.log.info("web.action", ["user": request.operatorName, "action": "retry_bulk", "orders": outcome.retried.count,
                                        "skipped": outcome.skipped.count])
        var body: Markup = "<p class=\"notice\" id=\"outcome\">retried \(Plural.count(outcome.retried.count, "order")): pending, due now</p>"
        if !outcome.retried.isEmpty {
            body = body + "<p id=\"retried\">" + Markup.join(outcome.retried.map(WebPage.orderLink), separator: ", ") + "</p>"
        }
        if !outcome.skipped.isEmpty {
            let rows = outcome.skipped.map { skip -> [Markup] in [WebPage.orderLink(skip.orderId), "\(skip.why)"] }
            body = body + WebPage.section("Skipped (changed since they were listed)", id: "skipped",
                                          WebPage.table(["order", "why"], rows, id: "skipped-orders"))
        }
        return WebPage.render("Retried", body, request: request, console: console)
    }

    /// The count, the orders, what their reasons will most likely do, and the confirming form.
    /// The list the orders came from, which each must still be in to be retried.
    struct Listed {
        var state: OrderState
        var reason: String?

        var fields: Markup {
            "<input type=\"hidden\" name=\"state\" value=\"\(state.rawValue)\"><input type=\"hidden\" name=\"reason\" value=\"\(reason ?? "")\">"
        }
    }

    static func confirmation(_ ids: [String], _ listed: Listed, missingNote: Bool, _ request: WebRequest,
                             console: WebConsole) -> HTTPServerResponse {
        let token = console.csrf.token(for: request.operatorName)
        let hidden = ids.enumerated().map { n, id -> Markup in
            "<input type=\"hidden\" name=\"id.\(n)\" value=\"\(HTML.pathSegment(id))\">"
        }
        var reasons: [String] = listed.reason.map { [$0] } ?? []
        for id in ids where listed.reason == nil {
            if let reason = try? console.ledger.orderRecord(id)?.order.reason, !reasons.contains(reason) { reasons.append(reason) }
        }
        let warnings = reasons.compactMap(BulkRetry.warning(reason:)).map { w -> Markup in "<p class=\"bad\">\(w)</p>" }
        let refusal: Markup = missingNote ? "<p class=\"refusal\" id=\"outcome\">refused: a note is required: say why (the incident, a ticket)</p>"
            : .empty
        let body: Markup = """
            \(refusal)<p id="confirm-count">Retry <strong>\(Plural.count(ids.count, "order"))</strong> \
            (\(listed.state.rawValue)\(listed.reason.map { " as " + $0 } ?? ""))? Each still so goes back to pending, due now, \
            its attempts reset, its history naming you (\(request.operatorName) via web).</p>
            <p>\(Markup.join(ids.map(WebPage.orderLink), separator: ", "))</p>\(warnings)
            <form method="post" action="/bulk/retry" id="confirm-form"><input type="hidden" name="csrf" value="\(token)">\
            <input type="hidden" name="confirm" value="yes">\(listed.fields)\(hidden)\
            <input type="text" name="note" placeholder="note (required)" aria-label="retry note" required>\
            <button type="submit" id="confirm-retry">Retry \(Plural.count(ids.count, "order"))</button></form>
            """
        return WebPage.render("Retry \(Plural.count(ids.count, "order"))?", body, request: request, console: console)
    }

    /// The form's `id.N` fields, percent-decoded, each once, in N's order.
    static func orderIds(_ form: [String: String]) -> [String] {
        let numbered = form.compactMap { key, value -> (Int, String)? in
            guard key.hasPrefix("id."), let n = Int(key.dropFirst(3)), let id = value.removingPercentEncoding, !id.isEmpty else { return nil }
            return (n, id)
        }.sorted { $0.0 < $1.0 }
        var seen = Set<String>()
        return numbered.map(\.1).filter { seen.insert($0).inserted }
    }
}
