import SettleBase
import SettleModel

/// The frame every page shares: the header with the search box, who is signed in, and whether
/// actions are on; then the page's own sections.
enum WebPage {
    static func render(_ title: String, _ body: Markup, request: WebRequest, console: WebConsole, status: Int = 200) -> HTTPServerResponse {
        let mode: Markup = console.actions ? "actions on" : "read-only"
        let page: Markup = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · settle</title><link rel="stylesheet" href="\(WebStylesheet.path)"></head>
            <body><header><a class="brand" href="/">settle</a><a href="/">Overview</a><a href="/orders?state=needs_attention">Lists</a>
            <a href="/search">Search</a><a href="/audit">Audit</a>
            <form method="get" action="/search" role="search"><input type="search" name="q" placeholder="order, user, transaction, \(StoreNames.owners()) order id" aria-label="search">
            <button type="submit">Search</button></form>
            <span class="who" id="who">\(request.operatorName) · \(mode)</span></header>
            \(banner(console))
            <main><h1>\(title)</h1>
            \(body)
            </main></body></html>
            """
        return WebResponse.html(status, page)
    }

    /// What `settle status --check` finds wrong, on every page while it is wrong: a store's
    /// breaker open, the hook unable to start, no daemon or an old last pass, a store's alert.
    static func banner(_ console: WebConsole) -> Markup {
        let problems: [String]
        do {
            problems = try StatusCheck.read(console.ledger, configuration: console.configuration, now: console.time.unixSeconds).problems
        } catch {
            problems = ["the ledger could not be read: \(error)"]
        }
        guard !problems.isEmpty else { return .empty }
        let items = problems.map { problem -> Markup in "<li>\(problem)</li>" }
        return "<div class=\"banner\" id=\"health-banner\" role=\"alert\"><strong>settle needs a person</strong> "
            + "(settle status --check):<ul>\(items)</ul></div>"
    }

    static func problem(_ status: Int, _ title: String, detail: String, request: WebRequest, console: WebConsole) -> HTTPServerResponse {
        render(title, "<p class=\"refusal\">\(detail)</p>", request: request, console: console, status: status)
    }

    // MARK: - Pieces

    static func section(_ heading: String, id: String, _ content: Markup) -> Markup {
        "<section class=\"card\" id=\"\(id)\"><h2>\(heading)</h2>\(content)</section>"
    }

    static func orderLink(_ id: String) -> Markup {
        "<a href=\"/orders/\(HTML.pathSegment(id))\">\(id)</a>"
    }

    /// A user id linked to the customer's page (nothing to link for an order without a user).
    static func userLink(_ id: String) -> Markup {
        id.isEmpty ? "-" : "<a href=\"/users/\(HTML.pathSegment(id))\">\(id)</a>"
    }

    static func stateBadge(_ state: OrderState) -> Markup {
        "<span class=\"state \(state.rawValue)\">\(state.rawValue)</span>"
    }

    /// Label and value pairs; an empty label ends a group (as the text view's blank line).
    static func facts(_ pairs: [(String, String)], id: String, classes: String = "facts") -> Markup {
        let items = pairs.filter { !$0.0.isEmpty }.map { pair -> Markup in "<dt>\(pair.0)</dt><dd>\(pair.1)</dd>" }
        return "<dl class=\"\(classes)\" id=\"\(id)\">\(items)</dl>"
    }

    static func table(_ header: [String], _ rows: [[Markup]], id: String, numeric: Set<Int> = []) -> Markup {
        let head = header.enumerated().map { c, h -> Markup in numeric.contains(c) ? "<th class=\"num\">\(h)</th>" : "<th>\(h)</th>" }
        let body = rows.map { row -> Markup in
            "<tr>\(row.enumerated().map { c, cell -> Markup in numeric.contains(c) ? "<td class=\"num\">\(cell)</td>" : "<td>\(cell)</td>" })</tr>"
        }
        return "<table id=\"\(id)\"><thead><tr>\(head)</tr></thead><tbody>\(body)</tbody></table>"
    }

    /// Orders as status lists them: id, state, user, product, transaction, attempts, reason, updated.
    static func orderTable(_ orders: [Order], now: Int64, id: String) -> Markup {
        guard !orders.isEmpty else { return "<p class=\"muted\">no matching orders</p>" }
        let rows = orders.map { o -> [Markup] in
            [orderLink(o.orderId), stateBadge(o.state), userLink(o.userId), "\(o.productId)", "\(o.transactionId ?? "-")",
             "\(o.attempts)", "\(o.reason ?? "-")", "\(Timestamp.age(max(0, now.saturatingSubtracting(o.updatedAt)))) ago"]
        }
        return table(["order", "state", "user", "product", "transaction", "attempts", "reason", "updated"], rows, id: id, numeric: [5])
    }

    static func preformatted(_ text: String) -> Markup { "<pre>\(text)</pre>" }
}
