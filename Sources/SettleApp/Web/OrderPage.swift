import SettleBase
import SettleModel
import SettleLedger
import SettleDelivery

/// `/orders/ID`: an order as `settle status ID` tells it: the verdict first, then its record,
/// history, notifications, the revoke it owes and Apple's Finish Transaction; with actions on,
/// the forms that act on it.
enum OrderPage {
    static func render(orderId: String, _ request: WebRequest, console: WebConsole, refusal: String? = nil,
                       status: Int = 200) throws -> HTTPServerResponse {
        guard let report = try OrderReport.read(console.ledger, orderId: orderId) else {
            return WebPage.problem(404, "Not found", detail: "no order \(orderId) in the ledger", request: request, console: console)
        }
        let now = console.time.unixSeconds
        let fields = StatusView.fields(report.order, now: now, verdict: report.verdict(now: now))
        let split = fields.firstIndex { $0.0.isEmpty } ?? 0
        var body: Markup = .empty
        if let refusal { body = body + "<p class=\"refusal\" id=\"outcome\">refused: \(refusal)</p>" }
        if let done = request.query["done"].flatMap(WebActions.Outcome.init(rawValue:)) {
            body = body + "<p class=\"notice\" id=\"outcome\">\(done.message)</p>"
        }
        body = body + WebPage.section("Verdict", id: "verdict", WebPage.facts(Array(fields[..<split]), id: "verdict-facts", classes: "facts verdict"))
        if !report.order.userId.isEmpty {
            body = body + "<p id=\"customer-link\">customer: \(WebPage.userLink(report.order.userId)) (every order of theirs)</p>"
        }
        if console.actions { body = body + WebActions.forms(report.order, request, console: console) }
        body = body + WebPage.section("Order", id: "order", WebPage.stateBadge(report.order.state)
                                      + WebPage.facts(Array(fields[split...]), id: "order-facts"))
        body = body + WebPage.section("History", id: "history", history(report.history))
        for section in report.storeSections {
            body = body + WebPage.section(section.title, id: section.id, WebPage.facts(section.facts, id: section.id + "-facts"))
        }
        if let revoke = report.revoke {
            body = body + WebPage.section("Revoke", id: "revoke", WebPage.facts([
                ("state", revoke.state),
                ("key", RevokeHook.idempotencyKey(transactionId: revoke.job.transactionId, round: revoke.job.round)),
                ("attempts", String(revoke.job.attempts)), ("last error", revoke.job.lastError ?? "-"),
            ], id: "revoke-facts"))
        }
        if !report.supportActions.isEmpty {
            body = body + WebPage.section("Transfers and redeliveries", id: "support-actions",
                                          WebPage.preformatted(StatusView.text(report.supportActions, now: now)))
        }
        if !report.notifications.isEmpty {
            let rows = report.notifications.map { n -> [Markup] in
                ["\(Timestamp.rfc3339(unixSeconds: n.receivedAt))", "\(n.type + (n.subtype.map { "/\($0)" } ?? ""))", "\(n.outcome)",
                 "\(n.source)", "<a href=\"/notifications/\(HTML.pathSegment(n.uuid))\">\(n.uuid)</a>"]
            }
            body = body + WebPage.section("Notifications", id: "notifications",
                                          WebPage.table(["received", "type", "outcome", "source", "uuid"], rows, id: "notification-list"))
        }
        body = body + "<p class=\"muted\"><a href=\"/api/orders/\(HTML.pathSegment(orderId))\">as JSON</a> (settle status \(Verdict.shellWord(orderId)) --json)</p>"
        return WebPage.render("Order \(orderId)", body, request: request, console: console, status: status)
    }

    static func history(_ entries: [HistoryEntry]) -> Markup {
        let rows = StatusView.historyRows(entries)
        guard !rows.isEmpty else { return "<p class=\"muted\">(none)</p>" }
        let body = rows.map { row -> Markup in
            let said: Markup = row.hookSaid.isEmpty ? .empty : "<pre class=\"hook-said\">hook said: \(row.hookSaid.joined(separator: "\n"))</pre>"
            return "<tr>\(row.cells.dropLast().map { cell -> Markup in "<td>\(cell)</td>" })<td>\(row.cells.last ?? "")\(said)</td></tr>"
        }
        return "<table id=\"history-table\"><thead><tr><th>at</th><th>kind</th><th>outcome</th><th>facts</th><th>detail</th></tr></thead><tbody>\(body)</tbody></table>"
    }
}
