import SettleBase
import SettleLedger

/// `/notifications/UUID`: one App Store Server Notification as `settle status --notification`
/// shows it (never its signed payload), linked to its order.
enum NotificationPage {
    static func render(uuid: String, _ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        guard let record = try console.ledger.notification(uuid: uuid) else {
            return WebPage.problem(404, "Not found", detail: "no notification \(uuid) in the ledger", request: request, console: console)
        }
        var body = WebPage.section("Notification", id: "notification", WebPage.facts(StatusView.fields(record), id: "notification-facts"))
        if let order = record.orderId { body = body + "<p>order: \(WebPage.orderLink(order))</p>" }
        body = body + "<p class=\"muted\"><a href=\"/api/notifications/\(HTML.pathSegment(uuid))\">as JSON</a></p>"
        return WebPage.render("Notification \(uuid)", body, request: request, console: console)
    }
}
