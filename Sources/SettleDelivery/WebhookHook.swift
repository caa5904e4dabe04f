import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Delivers by POSTing the hook payload to the operator's URL (SPEC section 5), signed so the
/// receiver can tell it comes from settle: `Settle-Signature: t=<unix>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">`, with the idempotency key in `Idempotency-Key`.
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

    package func deliver(order: Order, purchase: VerifiedPurchase) -> DeliveryReport {
        post(HookPayload.make(order: order, purchase: purchase, product: products[purchase.productId]).data,
             idempotencyKey: HookPayload.idempotencyKey(purchase))
    }

    /// POSTs one signed document and reads the answer (also for revokes).
    package func post(_ body: Data, idempotencyKey key: String) -> DeliveryReport {
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
            return DeliveryReport(outcome: .retry("webhook: \(error)"), exitCode: nil, output: "", durationMs: elapsed())
        }
        let text = String(decoding: response.body.prefix(CommandHook.outputLimit - 32), as: UTF8.self)
        let outcome: DeliveryOutcome
        switch response.status {
        case 200...299: outcome = .delivered
        case 409: outcome = .alreadyGranted("webhook answered HTTP 409: this purchase was granted before")
        case 408, 429, 500...599: outcome = .retry("webhook answered HTTP \(response.status)")
        default: outcome = .refused("webhook refused the delivery with HTTP \(response.status)")
        }
        return DeliveryReport(outcome: outcome, exitCode: response.status, output: text, durationMs: elapsed())
    }
}
