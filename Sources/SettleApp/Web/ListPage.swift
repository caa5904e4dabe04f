import SettleBase
import SettleModel
import SettleLedger

/// `/orders?state=S&reason=R`: the orders in one state (and reason), newest change first, a page
/// at a time, as Sidekiq's and Oban's lists by state. With actions on, the orders that may be
/// retried carry a box, and the page's forms retry the ticked ones or all on the page, after a
/// confirmation naming the count (`BulkRetryPage`).
enum ListPage {
    static let pageSize = 50

    static func render(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        let stateName = request.query["state"] ?? OrderState.needsAttention.rawValue
        guard let state = OrderState(rawValue: stateName) else {
            return WebPage.problem(400, "Unknown state", detail: "no state \(stateName); the states are "
                                   + OrderState.allCases.map(\.rawValue).joined(separator: ", "), request: request, console: console)
        }
        let reason = request.query["reason"].flatMap { $0.isEmpty ? nil : $0 }
        var query = OrderList.Query(state: state, reason: reason, limit: pageSize)
        if let after = request.query["after"] {
            guard let cursor = OrderList.Cursor(after) else {
                return WebPage.problem(400, "Bad page", detail: "the page link is damaged; start again from the first page",
                                       request: request, console: console)
            }
            query.after = cursor
        }
        let list = try console.ledger.orderList(query)
        let now = console.time.unixSeconds
        let title = state.rawValue + (reason.map { " · \($0)" } ?? "")
        var body = stateLinks(state, reason: reason)
        if let reason {
            body = body + "<p class=\"muted\" id=\"reason-meaning\">\(Verdict.explanation(reason))</p>"
        }
        body = body + "<p id=\"list-count\">\(Plural.count(list.total, "order"))" + (query.after == nil ? "" : " (a later page)") + "</p>"
        let retriable = console.actions && request.allows(.retryBulk) && (state == .needsAttention || state == .rejected)
            && reason != AttentionReason.unclaimedPurchase.rawValue
        body = body + (retriable ? selectable(list.orders, BulkRetryPage.Listed(state: state, reason: reason), request,
                                              console: console, now: now)
                       : WebPage.orderTable(list.orders, now: now, id: "list-orders"))
        if let next = list.next {
            var link = "/orders?state=\(Self.query(state.rawValue))"
            if let reason { link += "&reason=\(Self.query(reason))" }
            link += "&after=\(Self.query(next.text))"
            body = body + "<p><a id=\"next-page\" href=\"\(link)\">next page →</a></p>"
        }
        return WebPage.render("Orders: \(title)", body, request: request, console: console)
    }

    /// Links to every state's list, the current one marked.
    static func stateLinks(_ current: OrderState, reason: String?) -> Markup {
        let links = OrderState.allCases.map { state -> Markup in
            let mark: Markup = state == current && reason == nil ? " aria-current=\"page\"" : .empty
            return "<a href=\"/orders?state=\(state.rawValue)\"\(mark)>\(state.rawValue)</a>"
        }
        return "<nav class=\"states\" id=\"state-links\">\(Markup.join(links, separator: " · "))</nav>"
    }

    /// The table with a box per order, inside the form that retries the ticked ones; and a form
    /// of its own carrying every order of the page.
    static func selectable(_ orders: [Order], _ listed: BulkRetryPage.Listed, _ request: WebRequest, console: WebConsole,
                           now: Int64) -> Markup {
        guard !orders.isEmpty else { return "<p class=\"muted\">no matching orders</p>" }
        let token = console.csrf.token(for: request.operatorName)
        let rows = orders.enumerated().map { n, o -> [Markup] in
            ["<input type=\"checkbox\" name=\"id.\(n)\" value=\"\(HTML.pathSegment(o.orderId))\" aria-label=\"select \(o.orderId)\">",
             WebPage.orderLink(o.orderId), WebPage.stateBadge(o.state), WebPage.userLink(o.userId), "\(o.productId)", "\(o.reason ?? "-")",
             "\(Timestamp.age(max(0, now.saturatingSubtracting(o.updatedAt)))) ago"]
        }
        let table = WebPage.table(["", "order", "state", "user", "product", "reason", "updated"], rows, id: "list-orders")
        let all = orders.enumerated().map { n, o -> Markup in
            "<input type=\"hidden\" name=\"id.\(n)\" value=\"\(HTML.pathSegment(o.orderId))\">"
        }
        return """
            <form method="post" action="/bulk/retry" id="retry-selected-form"><input type="hidden" name="csrf" value="\(token)">\
            \(listed.fields)\
            \(table)<button type="submit" id="retry-selected">Retry selected…</button></form>\
            <form method="post" action="/bulk/retry" id="retry-page-form"><input type="hidden" name="csrf" value="\(token)">\
            \(listed.fields)\
            \(all)<button type="submit" id="retry-page">Retry all \(orders.count) on this page…</button></form>
            """
    }

    /// A query value, percent-encoded.
    static func query(_ text: String) -> String { HTML.pathSegment(text) }
}
