import Foundation
import SettleModel

extension AppStoreServerClient {
    /// What Apple said about an order id from a customer's App Store receipt email.
    package enum OrderLookup: Sendable, Equatable {
        /// The order's signed transactions (each still to be verified) and the environment.
        case found(signedTransactions: [String], environment: AppleEnvironment)
        /// Apple does not know the order id (status 1 in both environments, or 404).
        case notFound(String)
        /// Anything else, classified as for any Server API call.
        case failed(VerificationOutcome)
    }

    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`), production first, then sandbox: the
    /// purchases behind the order id a customer finds in Apple's receipt email (e.g. `MQ5Q8W3X2Z`),
    /// for support. https://developer.apple.com/documentation/appstoreserverapi/look-up-order-id
    package func lookUpOrder(_ orderId: String) -> OrderLookup {
        let (routed, _) = route(orderId) { environment -> Answer<[String]> in
            let answer = get("/inApps/v1/lookup/\(orderId)", environment: environment) { json -> (status: Int64, jws: [String])? in
                guard let status = json["status"]?.looseInt64 else { return nil }
                let jws = (json["signedTransactions"]?.arrayValue ?? []).compactMap { value -> String? in
                    if case let .string(text) = value { return text }
                    return nil
                }
                return (status, jws)
            }
            switch answer {
            // Status 1 is "invalid order id": not in this environment, so the other one is asked.
            case let .found(body): return body.status == 0 ? .found(body.jws) : .notFound
            case .notFound: return .notFound
            case .unauthorized: return .unauthorized
            case let .failed(outcome, answered): return .failed(outcome, answered: answered)
            case let .invalidId(message): return .invalidId(message)
            case .paginationExpired: return .failed(.retry("unexpected pagination error"), answered: true)
            }
        }
        switch routed {
        case let .found(jws, environment): return .found(signedTransactions: jws, environment: environment)
        case let .notFound(message): return .notFound(message.replacingOccurrences(of: "transaction", with: "order"))
        case let .invalidId(message): return .notFound(message)
        case let .failed(outcome): return .failed(outcome)
        }
    }
}
