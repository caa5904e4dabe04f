import Foundation
import SettleBase
import SettleGooglePlay

/// The Orders API of the fake Google: `orders.get` over scripted orders, and
/// `orders.reviewrefund`, which keeps every answer it is sent (Google acts on the first and
/// answers OK to the rest).
extension FakeGooglePlay {
    package func script(order: PlayOrder) { state.withLock { $0.orders[order.orderId] = order } }

    /// The Review Refund bodies received for an order, first first.
    package func refundReviews(_ orderId: String) -> [JSONValue] { state.withLock { $0.refundReviews[orderId] ?? [] } }

    /// `rest` is the path after `/orders/`: `{orderId}` or `{orderId}:reviewrefund`.
    func orders(_ request: HTTPServerRequest, rest: String) -> HTTPServerResponse {
        var segment = Substring(rest)
        var verb = ""
        if let colon = segment.lastIndex(of: ":") {
            verb = String(segment[segment.index(after: colon)...])
            segment = segment[..<colon]
        }
        guard !segment.contains("/"), let orderId = PlayPath.decode(segment) else { return Self.error(404, reason: "notFound", "Not Found") }
        return state.withLock { s -> HTTPServerResponse in
            switch (request.method, verb) {
            case ("GET", ""):
                guard let order = s.orders[orderId] else { return Self.error(404, reason: "notFound", "Order not found.") }
                return .json(200, order.json.data)
            case ("POST", "reviewrefund"):
                guard s.orders[orderId] != nil else { return Self.error(404, reason: "notFound", "Order not found.") }
                guard let body = try? JSONValue.parse(request.body) else {
                    return Self.error(400, reason: "invalid", "Request contains an invalid argument.")
                }
                if let refused = FakeReviewRefund.problem(body) { return Self.error(400, reason: "invalid", refused) }
                s.refundReviews[orderId, default: []].append(body)
                return .json(200, Data("{}".utf8))
            default:
                return Self.error(404, reason: "notFound", "Not Found")
            }
        }
    }
}
