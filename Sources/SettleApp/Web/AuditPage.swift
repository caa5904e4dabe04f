import SettleBase
import SettleModel
import SettleLedger

/// `/audit`: the audit log, newest first, 50 a page (`?before=ID` for older, `?actor=NAME` for
/// one person), and `/api/audit`, the same entries as a JSON array. Every signed-in role may read
/// it: it says who did what, never a secret (`AuditEntry`).
enum AuditPage {
    static let pageSize = 50

    /// The query's filter, or why it is not one.
    struct Query {
        var before: Int64?
        var actor: String?
        var since: Int64?
        var limit: Int

        init(_ request: WebRequest, now: Int64, defaultLimit: Int) throws(QueryError) {
            before = try request.query["before"].map { (text) throws(QueryError) -> Int64 in
                guard let id = Int64(text), id > 0 else {
                    throw QueryError("before needs an entry id (a positive number)")
                }
                return id
            }
            actor = request.query["actor"].flatMap { $0.isEmpty ? nil : $0 }
            since = try request.query["since"].map { (text) throws(QueryError) -> Int64 in
                guard let value = AuditView.since(text, now: now) else {
                    throw QueryError("since takes \(AuditView.sinceForms)")
                }
                return value
            }
            limit = defaultLimit
            if let text = request.query["limit"] {
                guard let n = Int(text), (1...1000).contains(n) else {
                    throw QueryError("limit needs a number from 1 to 1000")
                }
                limit = n
            }
        }
    }

    struct QueryError: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    static func render(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        let query: Query
        do {
            query = try Query(request, now: console.time.unixSeconds, defaultLimit: pageSize)
        } catch {
            return WebPage.problem(400, "Audit log", detail: error.message, request: request, console: console)
        }
        let entries = try console.ledger.auditEntries(since: query.since, limit: query.limit, actor: query.actor,
                                                      before: query.before)
        let filter: Markup = """
            <form method="get" action="/audit" role="search" id="audit-filter"><input type="text" name="actor" \
            value="\(query.actor ?? "")" placeholder="actor" aria-label="actor">\
            <button type="submit">Filter</button></form>
            """
        let heading = query.actor.map { "Entries by \($0)" } ?? "Entries"
        var body = filter + WebPage.section(heading, id: "audit", table(entries))
        if entries.count == query.limit, let last = entries.last {
            let actor = query.actor.map { "&actor=\(HTML.pathSegment($0))" } ?? ""
            body = body + "<p><a id=\"older\" href=\"/audit?before=\(last.id)\(actor)\">older entries</a></p>"
        }
        if !console.actions {
            body = body + "<p class=\"muted\">this console is read-only: its own sign-ins are in its log, not here</p>"
        }
        body = body + "<p class=\"muted\"><a href=\"/api/audit\">as JSON</a> · settle audit prints the same</p>"
        return WebPage.render("Audit log", body, request: request, console: console)
    }

    static func table(_ entries: [AuditEntry]) -> Markup {
        guard !entries.isEmpty else { return "<p class=\"muted\">no audit entries</p>" }
        let rows = entries.map { e -> [Markup] in
            let subject: Markup = orderActions.contains(e.action) ? WebPage.orderLink(e.subject) : "\(e.subject)"
            return ["\(e.id)", "\(Timestamp.rfc3339(unixSeconds: e.at))", "\(e.actor)", "\(e.channel.rawValue)",
                    "\(e.role?.rawValue ?? "-")", "\(e.action)", subject,
                    "<span class=\"outcome \(e.outcome.rawValue)\">\(e.outcome.rawValue)</span>", "\(e.source)",
                    "\(e.detail)"]
        }
        let header = ["id", "time", "actor", "channel", "role", "action", "subject", "outcome", "source", "detail"]
        return WebPage.table(header, rows, id: "audit-entries", numeric: [0])
    }

    /// Actions whose subject is an order id (the page links it).
    static let orderActions: Set<String> = ["retry", "assign", "resolve", "transfer", "redeliver", "retry_bulk", "bind"]

    /// `/api/audit`: a JSON array, newest first, of the objects `settle audit --json` prints;
    /// `before`, `actor`, `since` and `limit` (default 100, at most 1000) as the page takes them.
    static func api(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        do {
            let query = try Query(request, now: console.time.unixSeconds, defaultLimit: 100)
            let entries = try console.ledger.auditEntries(since: query.since, limit: query.limit, actor: query.actor,
                                                          before: query.before)
            return WebResponse.json(200, .array(entries.map(AuditView.json)))
        } catch let error as QueryError {
            return WebResponse.json(400, .object([("error", .string(error.message))]))
        }
    }
}
