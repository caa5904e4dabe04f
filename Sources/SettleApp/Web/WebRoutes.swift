import SettleBase
import SettleModel
import SettleLedger

/// Which page answers which path. GET pages read; POST is the purchase-token search and, with
/// actions on, the order actions.
enum WebRoutes {
    static func route(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        let s = request.segments
        let get = request.method == "GET" || request.method == "HEAD"
        switch (get, s.first) {
        case (true, nil):
            return try OverviewPage.render(request, console: console)
        case (true, "static") where s == ["static", "settle.css"]:
            return WebResponse.stylesheet()
        case (_, "search") where s.count == 1:
            return try SearchPage.render(request, console: console)
        case (true, "orders") where s.count == 1:
            return try ListPage.render(request, console: console)
        case (false, "bulk") where s == ["bulk", "retry"]:
            return try BulkRetryPage.perform(request, console: console)
        case (true, "orders") where s.count == 2:
            return try OrderPage.render(orderId: s[1], request, console: console)
        case (false, "orders") where s.count == 3:
            return try WebActions.perform(s[2], orderId: s[1], request, console: console)
        case (true, "audit") where s.count == 1:
            return try AuditPage.render(request, console: console)
        case (false, "users") where s.count == 3 && s[2] == "policy":
            return try CustomerPolicyForm.perform(userId: s[1], request, console: console)
        case (true, "users") where s.count == 2:
            return try CustomerPage.render(userId: s[1], request, console: console)
        case (true, "notifications") where s.count == 2:
            return try NotificationPage.render(uuid: s[1], request, console: console)
        case (true, "api"):
            return try api(Array(s.dropFirst()), request, console: console)
        default:
            return WebPage.problem(404, "Not found", detail: "no page at /\(s.joined(separator: "/"))", request: request, console: console)
        }
    }

    /// `/api/audit` (`AuditPage.api`), `/api/status` (the query's user, transaction, state and limit as status
    /// takes them),
    /// `/api/orders/ID`, `/api/notifications/UUID`: exactly `settle status --json`'s JSON.
    static func api(_ s: [String], _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        switch (s.first, s.count) {
        case ("status", 1):
            var filter = OrderFilter(limit: 50)
            if let state = request.query["state"] {
                guard let value = OrderState(rawValue: state) else {
                    return WebResponse.json(400, .object([("error", .string("unknown state '\(state)'"))]))
                }
                filter.state = value
            }
            if let limit = request.query["limit"] {
                guard let n = Int(limit), (0...10_000).contains(n) else {
                    return WebResponse.json(400, .object([("error", .string("limit needs a number from 0 to 10000"))]))
                }
                filter.limit = n
            }
            filter.userId = request.query["user"]
            filter.transactionId = request.query["transaction"]
            filter.appAccountToken = request.query["app_account_token"]
            return WebResponse.json(200, try StatusReport.read(console.ledger, filter: filter, configuration: console.configuration,
                                                               time: console.time, lookups: .localOnly).json)
        case ("orders", 2):
            guard let report = try OrderReport.read(console.ledger, orderId: s[1]) else {
                return WebResponse.json(404, .object([("error", .string("no order \(s[1]) in the ledger"))]))
            }
            return WebResponse.json(200, report.json(now: console.time.unixSeconds))
        case ("users", 2):
            let report = try CustomerReport.read(console.ledger, userId: s[1], configuration: console.configuration,
                                                 now: console.time.unixSeconds)
            guard !report.entries.isEmpty else {
                return WebResponse.json(404, .object([("error", .string("no order of user \(s[1]) in the ledger"))]))
            }
            let policy = try CustomerPolicyView.read(console.ledger, userId: s[1])
            return WebResponse.json(200, policy.adding(to: report.json))
        case ("audit", 1):
            return try AuditPage.api(request, console: console)
        case ("notifications", 2):
            guard let record = try console.ledger.notification(uuid: s[1]) else {
                return WebResponse.json(404, .object([("error", .string("no notification \(s[1]) in the ledger"))]))
            }
            return WebResponse.json(200, StatusView.json(record))
        default:
            return WebResponse.json(404, .object([("error", .string("no API at /api/\(s.joined(separator: "/"))"))]))
        }
    }
}
