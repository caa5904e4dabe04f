import SettleBase
import SettleModel
import SettleLedger

/// `/users/U`: one customer, as `settle status --user U` tells it: each order they bought, hold,
/// gave away or received, what the hook was told to grant, a subscription's state, refunds and
/// the support actions; the answer to "I paid and never got it" from one page.
enum CustomerPage {
    static func render(userId: String, _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        let now = console.time.unixSeconds
        let report = try CustomerReport.read(console.ledger, userId: userId, configuration: console.configuration, now: now)
        guard !report.entries.isEmpty else {
            return WebPage.problem(404, "Not found", detail: "no order of user \(userId) in the ledger", request: request, console: console)
        }
        let counts = Dictionary(grouping: report.entries, by: { $0.order.state }).mapValues(\.count)
        let summary = OrderState.allCases.compactMap { state -> Markup? in
            counts[state].map { "\(WebPage.stateBadge(state)) \($0)" }
        }
        var body: Markup = "<p id=\"customer-summary\">\(Plural.count(report.total, "order")): "
            + Markup.join(summary, separator: " · ") + "</p>"
        if report.entries.count < report.total {
            body = body + "<p class=\"muted\">the \(report.entries.count) most recently changed are shown</p>"
        }
        body = body + refundHistory(report, configuration: console.configuration, now: now)
        let cards = report.entries.map { e -> Markup in
            var facts: [(String, String)] = [("how", e.relation), ("goods", e.goods)]
            if let s = e.subscription { facts.append(("subscription", s)) }
            if let r = e.refund { facts.append(("refund", r)) }
            facts += e.supportActions.map { ("support", Verdict.supportLine($0, now: now)) }
            let verdict = Verdict(e.order, now: now)
            facts += [("delivered", verdict.delivered)] + (verdict.next.map { [("next", $0)] } ?? [])
            return """
                <section class="card customer-order" id="order-\(HTML.pathSegment(e.order.orderId))"><h2>\(WebPage.orderLink(e.order.orderId)) \
                \(WebPage.stateBadge(e.order.state)) <span class="muted">\(e.order.reason ?? "") \(e.order.store.logName)</span></h2>\
                \(WebPage.facts(facts, id: "facts-\(HTML.pathSegment(e.order.orderId))"))</section>
                """
        }
        if request.query["done"] == "policy" {
            body = "<p class=\"notice\" id=\"outcome\">\(CustomerPolicyForm.doneMessage)</p>" + body
        }
        body = body + (try CustomerPolicyForm.card(userId: userId, request, console: console)) + Markup.join(cards)
        body = body + "<p class=\"muted\"><a href=\"/api/users/\(HTML.pathSegment(userId))\">as JSON</a> "
            + "(settle status --user \(Verdict.shellWord(userId)) --json, its customer object)</p>"
        return WebPage.render("Customer \(userId)", body, request: request, console: console)
    }
}
