import SettleBase
import SettleModel
import SettleLedger
import SettleEngine

/// `/search?q=…`: an order id, a user, a transaction (Apple's, or a Google order id GPA.…), an
/// Apple order id from the receipt email (looked up with Apple as `status --transaction` does,
/// when server_api is configured; else matched locally), or an appAccountToken. A purchase
/// token is a bearer secret: it is searched only through the POST form, so it never appears in
/// a URL, a history or a log.
enum SearchPage {
    static func render(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        let now = console.time.unixSeconds
        var results: Markup = .empty
        var heading = "Search"
        if request.method == "POST", let id = request.form["lookup"] {
            return try lookUp(id.trimmingCharacters(in: .whitespacesAndNewlines), request, console: console)
        }
        if request.method == "POST" {
            guard !request.isCrossSite else { return WebActions.crossSite(request, console: console) }
            let text = (request.form["purchase_token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard let token = PurchaseToken(text) else {
                return page("<p class=\"refusal\">that is not a purchase token (printable ASCII, at most 4096 characters)</p>",
                            query: "", request, console: console, status: 400)
            }
            var filter = OrderFilter(limit: 50)
            filter.purchaseToken = token
            let summary = try console.ledger.summary(filter)
            heading = "Orders holding purchase token \(token.fingerprint)"
            results = WebPage.section(heading, id: "results", WebPage.orderTable(summary.orders, now: now, id: "result-orders"))
            return page(results, query: "", request, console: console)
        }
        let q = (request.query["q"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !q.isEmpty else { return page(.empty, query: "", request, console: console) }
        var found: [Order] = []
        var seen = Set<String>()
        func add(_ orders: [Order]) {
            for order in orders where seen.insert(order.orderId).inserted { found.append(order) }
        }
        if let order = try console.ledger.orderRecord(q)?.order { add([order]) }
        add(try console.ledger.summary(OrderFilter(userId: q, limit: 50)).orders)
        var byTransaction = OrderFilter(limit: 50)
        byTransaction.transactionId = q
        // A GET never asks a store: any page can make a browser send one (an image, a link).
        let report = try StatusReport.read(console.ledger, filter: byTransaction, configuration: console.configuration, time: console.time,
                                           lookups: .localOnly)
        add(report.summary.orders)
        if q.count == 36, q.filter({ $0 == "-" }).count == 4 {
            add(try console.ledger.summary(OrderFilter(appAccountToken: q, limit: 50)).orders)
        }
        var offer: Markup = .empty
        if let store = storeName(of: q), request.allows(.lookup) {
            let token = console.csrf.token(for: request.operatorName)
            offer = WebPage.section("Ask \(store) about order \(q)", id: "lookup", """
                <form method="post" action="/search" class="action" id="lookup-form"><input type="hidden" name="csrf" value="\(token)">\
                <input type="hidden" name="lookup" value="\(q)"><button type="submit">Look up \(q) with \(store)</button></form>
                """)
        }
        results = offer + WebPage.section("\(Plural.count(found.count, "order")) for “\(q)”", id: "results",
                                          WebPage.orderTable(found, now: now, id: "result-orders"))
        return page(results, query: q, request, console: console)
    }

    /// The store whose order id `q` looks like, when the configuration can ask it.
    static func storeName(of q: String) -> String? {
        StoreModules.all.first { $0.isOrderId(q) }?.descriptor.owner
    }

    /// `POST /search` with `lookup`: asks the store about its order id, with the same-site checks
    /// and CSRF token the actions need, through the process's one client per store, at most
    /// `ConsoleLookups.perMinute` a minute for each operator and client.
    static func lookUp(_ q: String, _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        guard !request.isCrossSite else { return WebActions.crossSite(request, console: console) }
        guard console.csrf.isValid(request.form["csrf"], for: request.operatorName) else {
            console.log.warning("web.csrf_refused", ["user": request.operatorName, "action": "lookup"])
            return WebPage.problem(403, "Form refused", detail: "the form has expired or did not come from this console: search again",
                                   request: request, console: console)
        }
        if let refusal = WebPermission.refusal(.lookup, subject: q, request, console: console) { return refusal }
        guard storeName(of: q) != nil else {
            return page("<p class=\"refusal\">\(q) is not an order id of \(StoreNames.owners())</p>", query: q, request,
                        console: console, status: 400)
        }
        if let wait = console.lookups.admit("\(request.operatorName)@\(request.client)") {
            return WebResponse.text(429, "at most \(console.lookups.perMinute) store lookups a minute; try again in \(wait) s",
                                    extra: [HTTPHeader("Retry-After", String(wait))])
        }
        let lookups: StatusReport.StoreLookups
        do { lookups = try console.lookups.lookups() } catch {
            return page("<p class=\"refusal\">the store cannot be asked: \(error.message)</p>", query: q, request, console: console, status: 503)
        }
        var filter = OrderFilter(limit: 50)
        filter.transactionId = q
        let report = try StatusReport.read(console.ledger, filter: filter, configuration: console.configuration, time: console.time,
                                           lookups: lookups)
        console.log.info("web.store_lookup", ["user": request.operatorName, "order": q])
        var sections: [Markup] = []
        for answer in report.storeOrders {
            sections.append(WebPage.section("\(answer.title) \(q)", id: answer.sectionId,
                                            WebPage.preformatted(answer.text(report.summary.matching))))
        }
        if sections.isEmpty { sections.append("<p class=\"muted\" id=\"lookup-none\">no store is configured to look up \(q)</p>") }
        let now = console.time.unixSeconds
        let found = Plural.count(report.summary.orders.count, "order")
        return page(Markup.join(sections) + WebPage.section("\(found) for “\(q)”", id: "results",
                                                            WebPage.orderTable(report.summary.orders, now: now, id: "result-orders")),
                    query: q, request, console: console)
    }

    static func page(_ results: Markup, query: String, _ request: WebRequest, console: WebConsole, status: Int = 200) -> HTTPServerResponse {
        let tokenStores = StoreNames.list(StoreRegistry.descriptors.filter { $0.provenByPurchaseToken }.map { $0.displayName }, "or")
        let forms: Markup = """
            <section class="card" id="search-forms">
            <form method="get" action="/search" class="action" id="search-form"><input type="text" name="q" value="\(query)" size="48" \
            placeholder="order id, user, transaction, \(StoreNames.owners()) order id" aria-label="query">
            <button type="submit">Search</button></form>
            <form method="post" action="/search" class="action" id="token-form"><input type="password" name="purchase_token" size="48" \
            autocomplete="off" placeholder="\(tokenStores) purchase token (sent in the form, never in the address)" aria-label="purchase token">
            <button type="submit">Find by purchase token</button></form>
            </section>
            """
        return WebPage.render("Search", forms + results, request: request, console: console, status: status)
    }
}
