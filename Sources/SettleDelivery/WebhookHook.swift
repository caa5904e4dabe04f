import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Delivers by POSTing the hook payload to the operator's URL (SPEC section 5), signed so the
/// receiver can tell it comes from settle: `Settle-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">`, with the idempotency key in `Idempotency-Key`.
///
/// A 2xx is not enough to count as delivered: a maintenance page, a load balancer's default
/// answer or a proxy answer 200 too, and for Google Play a delivered order is acknowledged (Google
/// keeps the money). The receiver confirms explicitly with what only a receiver that acted can
/// say and settle's request never carries: the event in the past tense naming the request's key,
/// in a JSON body (`{"granted": "<key>"}`, `{"revoked": "<key>"}`) or a header
/// (`Settle-Granted: <key>`, `Settle-Revoked: <key>`). An endpoint that echoes the request (which
/// holds `idempotency_key`) confirms nothing; any other 2xx is `unconfirmed`, retried as a failure.
package struct WebhookHook: Deliverer {
    package var url: String
    package var secret: Secret
    package var products: [String: Configuration.Product]
    package var client: HTTPClient
    package var time: any TimeSource

    package init(url: String, secret: Secret, timeoutSeconds: Double, connectTimeoutSeconds: Double,
                products: [String: Configuration.Product], time: any TimeSource) {
        self.url = url
        self.secret = secret
        self.products = products
        self.time = time
        client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: min(connectTimeoutSeconds, timeoutSeconds),
                                                                   totalTimeout: timeoutSeconds,
                                                                   maxResponseBytes: 1 << 20))
    }

    /// The signature header for `body` at `timestamp` (exposed for receivers' tests).
    package static func signature(body: Data, timestamp: Int64, secret: Secret) -> String {
        let signed = Data("\(timestamp).".utf8) + body
        return "t=\(timestamp),v1=\(HMACSHA256.hex(key: Data(secret.value.utf8), message: signed))"
    }

    /// The member of a JSON answer that confirms `event`: "granted" for a grant, "revoked" for a
    /// revoke. No document settle sends has a member of that name (a test holds it), so an
    /// endpoint that returns the request it was sent cannot confirm it.
    package static func confirmationField(_ event: String) -> String {
        event == RevokeHook.event ? "revoked" : "granted"
    }

    /// The header a receiver may confirm `event` with instead of a JSON body.
    package static func confirmationHeader(_ event: String) -> String {
        event == RevokeHook.event ? "Settle-Revoked" : "Settle-Granted"
    }

    /// Whether a 2xx answer says the receiver acted on the request with `key`: the event's header
    /// naming the key, or a JSON object body whose event field ("granted", "revoked") is the key,
    /// exactly. `idempotency_key` alone is what settle sent, so it confirms nothing.
    package static func confirms(_ response: HTTPResponse, key: String, event: String = HookPayload.grantEvent) -> Bool {
        if let named = response.header(confirmationHeader(event)), named.trimmingCharacters(in: .whitespaces) == key { return true }
        guard response.body.contains(UInt8(ascii: "{")), let json = try? JSONValue.parse(response.body),
              case let .string(confirmed)? = json[confirmationField(event)] else { return false }
        return confirmed == key
    }

    package func deliver(order: Order, purchase: VerifiedPurchase) -> DeliveryReport {
        post(HookPayload.make(order: order, purchase: purchase, product: products[purchase.productId]).data,
             idempotencyKey: HookPayload.idempotencyKey(purchase))
    }

    package func send(_ document: JSONValue, orderId: String, idempotencyKey: String) -> DeliveryReport {
        post(document.data, idempotencyKey: idempotencyKey, event: document["event"]?.looseString ?? HookPayload.grantEvent)
    }

    /// POSTs one signed document and reads the answer (also for revokes: `event` names what a
    /// confirmation confirms).
    package func post(_ body: Data, idempotencyKey key: String, event: String = HookPayload.grantEvent) -> DeliveryReport {
        let request = HTTPRequest(method: "POST", url: url, headers: [
            HTTPHeader("Content-Type", "application/json"),
            HTTPHeader("Idempotency-Key", key),
            HTTPHeader("Settle-Signature", WebhookHook.signature(body: body, timestamp: time.unixSeconds, secret: secret)),
        ], body: body)
        let started = DispatchTime.now()
        func elapsed() -> Int { Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000) }
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            return DeliveryReport(outcome: .retry("webhook: \(error)"), exitCode: nil, output: "", durationMs: elapsed(),
                                  timedOut: error.kind == .timeout)
        }
        let text = String(decoding: response.body.prefix(CommandHook.outputLimit - 32), as: UTF8.self)
        let outcome: DeliveryOutcome
        switch response.status {
        case 200...299 where WebhookHook.confirms(response, key: key, event: event): outcome = .delivered
        case 200...299:
            let field = WebhookHook.confirmationField(event), header = WebhookHook.confirmationHeader(event)
            outcome = .unconfirmed("webhook answered HTTP \(response.status) without confirming the \(event) "
                                   + "(no \"\(field)\": \"\(key)\" in a JSON body, no \(header): \(key) header)")
        case 409: outcome = .alreadyGranted("webhook answered HTTP 409: this purchase was granted before")
        case 408, 429, 500...599: outcome = .retry("webhook answered HTTP \(response.status)")
        default: outcome = .refused("webhook refused the delivery with HTTP \(response.status)")
        }
        return DeliveryReport(outcome: outcome, exitCode: response.status, output: text, durationMs: elapsed())
    }
}
