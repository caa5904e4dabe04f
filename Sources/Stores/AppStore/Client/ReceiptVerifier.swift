import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Re-verifies an order's app receipt with `verifyReceipt`: production first, one hop to
/// sandbox on 21007 (or back to production on 21008 when starting in sandbox), never more.
/// https://developer.apple.com/documentation/appstorereceipts/verifyreceipt
package struct ReceiptVerifier: OrderVerifier {
    package var productionURL: String
    package var sandboxURL: String
    package var sharedSecret: Secret
    package var matcher: ReceiptMatcher
    package var client: HTTPClient
    /// Loads an order's stored receipt (base64 text).
    package var receiptText: @Sendable (Order) throws -> String?
    /// Told about every HTTP request: environment, a short outcome label, seconds (for metrics).
    package var observe: (@Sendable (_ environment: AppleEnvironment, _ outcome: String, _ seconds: Double) -> Void)?
    /// The process's pacer: each request takes a token of `verify_receipt`'s bucket for its
    /// environment, whose rate is learned from Apple's 429s (`ReceiptVerifier+Pacing`). Nil sends unpaced.
    package var pacer: Pacer?

    package init(productionURL: String, sandboxURL: String, sharedSecret: Secret, matcher: ReceiptMatcher,
                client: HTTPClient, receiptText: @escaping @Sendable (Order) throws -> String?) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.sharedSecret = sharedSecret
        self.matcher = matcher
        self.client = client
        self.receiptText = receiptText
    }

    package func verify(_ order: Order) throws -> Verification {
        let started = DispatchTime.now()
        func elapsed() -> Int { Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000) }
        guard let receipt = try receiptText(order) else {
            return Verification(outcome: .needsAttention(
                reason: .proofMissing, detail: "the order's receipt is missing from the ledger or does not hash to its receipt_sha256"))
        }
        // An order seen in sandbox before starts there; everything else starts in production,
        // as Apple asks (apple-protocol.md 1.9).
        let first: AppleEnvironment = order.appleEnvironment == .sandbox ? .sandbox : .production
        var answer = post(receipt, to: first)
        if case let .answered(response, _) = answer {
            let status = ReceiptStatus(status: response.status, isRetryable: response.isRetryable)
            if first == .production && status == .sandboxReceipt {
                guard matcher.acceptSandbox else {
                    return Verification(outcome: .rejected(reason: .sandboxNotAccepted,
                                                           detail: "sandbox receipt (21007) and accept_sandbox is false"),
                                        appleStatus: response.status, environment: AppleEnvironment.sandbox.rawValue, durationMs: elapsed(),
                                        storeAnswered: true)
                }
                answer = post(receipt, to: .sandbox)
            } else if first == .sandbox && status == .productionReceipt {
                answer = post(receipt, to: .production)
            }
        }
        var verification = classify(answer, order: order)
        verification.durationMs = elapsed()
        return verification
    }

    package enum Answer {
        case answered(ReceiptResponse, AppleEnvironment)
        case failed(VerificationOutcome, AppleEnvironment, answered: Bool)
        /// A 429 above the bucket's floor: the pacer lowered verifyReceipt's rate and the order
        /// waits, no attempt used, while the pass goes on at the new rate.
        case slowed(String, AppleEnvironment)
    }

    private func post(_ receipt: String, to endpoint: AppleEnvironment) -> Answer {
        let started = DispatchTime.now()
        let (answer, label) = exchange(receipt, with: endpoint)
        observe?(endpoint, label, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
        return answer
    }

    /// One request and its answer, with a bounded label for metrics.
    private func exchange(_ receipt: String, with endpoint: AppleEnvironment) -> (Answer, String) {
        let body = JSONValue.object([
            ("receipt-data", .string(receipt)),
            ("password", .string(sharedSecret.value)),
            ("exclude-old-transactions", .bool(true)),
        ])
        let url = endpoint == .production ? productionURL : sandboxURL
        let request = HTTPRequest(method: "POST", url: url, headers: [HTTPHeader("Content-Type", "application/json")],
                                  body: body.data)
        let name = "\(endpoint.rawValue.lowercased()) verifyReceipt"
        let key = pacerKey(endpoint)
        if let refusal = pace(key) {
            return (.failed(.paced("\(refusal)"), endpoint, answered: false), "paced")
        }
        let sentAt = pacer?.now
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            if error.kind == .responseTooLarge {
                return (.failed(.retry("\(name): \(error)"), endpoint, answered: true), error.kind.rawValue)
            }
            return (.failed(.storeUnavailable("\(name): \(error)", retryAfter: nil), endpoint, answered: false), error.kind.rawValue)
        }
        let now = pacer.map { Date(timeIntervalSince1970: $0.now) } ?? Date()
        let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: now)
        if let slowed = paced(key, response, sentAt: sentAt, retryAfter: retryAfter, who: name) {
            return (.slowed(slowed, endpoint), "http_429")
        }
        switch response.status {
        case 200...299: break
        case 429:
            return (.failed(.storeUnavailable("\(name) answered HTTP 429 (rate limited)", retryAfter: retryAfter),
                            endpoint, answered: false), "http_429")
        case 500...599:
            return (.failed(.storeUnavailable("\(name) answered HTTP \(response.status)", retryAfter: nil), endpoint, answered: false),
                    "http_5xx")
        case 401, 403:
            // Our credentials (or a proxy in front of Apple refusing us): every order would get it.
            return (.failed(.configurationFault("Apple's \(name) answered HTTP \(response.status); check receipt_api and the shared secret"),
                            endpoint, answered: true), "http_\(response.status)")
        case 404, 405, 410:
            // The URL itself is wrong or gone: about the endpoint, not this order.
            return (.failed(.configurationFault("Apple's \(name) answered HTTP \(response.status); check receipt_api URLs"),
                            endpoint, answered: true), "http_4xx")
        default:
            // A 4xx about this request (400, 413 for a huge receipt, 422, ...): this order fails,
            // with an attempt, and the pass goes on with the others.
            return (.failed(.retry("Apple's \(name) answered HTTP \(response.status) for this order's receipt"), endpoint, answered: true),
                    "http_4xx")
        }
        guard let json = try? JSONValue.parse(response.body), let parsed = ReceiptResponse(json) else {
            return (.failed(.storeUnavailable("\(name) sent an answer that is not a verifyReceipt response (\(response.body.count) bytes)",
                                              retryAfter: nil), endpoint, answered: false), "garbage")
        }
        return (.answered(parsed, endpoint), "status_\(parsed.status)")
    }

    private func classify(_ answer: Answer, order: Order) -> Verification {
        switch answer {
        case let .failed(outcome, endpoint, answered):
            return Verification(outcome: outcome, environment: endpoint.rawValue, storeAnswered: answered)
        case let .slowed(message, endpoint):
            var verification = Verification(outcome: .paced(message), environment: endpoint.rawValue)
            verification.pacerAdapted = true
            return verification
        case let .answered(response, endpoint):
            let environment = response.environment ?? endpoint.rawValue
            let name = "\(endpoint.rawValue.lowercased()) verifyReceipt"
            let outcome: VerificationOutcome
            switch ReceiptStatus(status: response.status, isRetryable: response.isRetryable) {
            case .valid, .validExpired:
                if response.hasReceipt {
                    outcome = matcher.match(response, environment: environment, order: order)
                } else {
                    outcome = .retry("\(name) answered status \(response.status) without a receipt")
                }
            case .sandboxReceipt, .productionReceipt:
                outcome = .retry("\(name) answered \(ReceiptStatus.explain(response.status)) after one hop; not hopping again")
            case .retryOrder:
                outcome = .retry("\(name): \(ReceiptStatus.explain(response.status))")
            case .storeUnavailable:
                outcome = .storeUnavailable("\(name): \(ReceiptStatus.explain(response.status))", retryAfter: nil)
            case .invalid:
                outcome = .rejected(reason: .receiptInvalid, detail: "\(name): \(ReceiptStatus.explain(response.status))")
            case .configurationFault:
                outcome = .configurationFault("\(name): \(ReceiptStatus.explain(response.status))")
            case .unexpected:
                outcome = .retry("\(name): \(ReceiptStatus.explain(response.status))")
            }
            return Verification(outcome: outcome, appleStatus: response.status, environment: environment, storeAnswered: true)
        }
    }
}
