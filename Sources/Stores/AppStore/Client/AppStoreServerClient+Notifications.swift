import Foundation
import SettleBase
import SettleModel

/// One page of Get Notification History
/// (https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryresponse):
/// the `signedPayload`s, still to be verified like any notification.
package struct NotificationHistoryPage: Sendable, Equatable {
    package var signedPayloads: [String]
    package var hasMore: Bool
    package var paginationToken: String?

    package init?(_ json: JSONValue) {
        guard let entries = json["notificationHistory"]?.arrayValue else { return nil }
        signedPayloads = entries.compactMap { $0["signedPayload"]?.looseString }
        hasMore = json["hasMore"]?.looseBool ?? false
        paginationToken = json["paginationToken"]?.looseString
    }
}

extension AppStoreServerClient {
    /// What one call that is not about a transaction id's environment concluded.
    package enum CallResult<Body: Sendable & Equatable>: Sendable, Equatable {
        case ok(Body)
        /// Apple refused the pagination token (4000014 / 4000017): start the window again.
        case paginationExpired
        /// Classified as for verifications: `storeUnavailable` is for the breaker.
        case failed(VerificationOutcome, storeAnswered: Bool)
    }

    /// Get Notification History: `POST /inApps/v1/notifications/history` for one environment
    /// (notifications never hop: each environment has its own), from `startMs` (inclusive) to
    /// `endMs` (exclusive), continuing at `paginationToken`.
    /// https://developer.apple.com/documentation/appstoreserverapi/get-notification-history
    package func notificationHistory(environment: AppleEnvironment, startMs: Int64, endMs: Int64,
                                    paginationToken: String?) -> CallResult<NotificationHistoryPage> {
        var path = "/inApps/v1/notifications/history"
        if let paginationToken {
            // Opaque text from Apple: escaped so that it cannot change the query's meaning.
            let allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
            path += "?paginationToken=" + (paginationToken.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }
        let body = JSONValue.object([("startDate", .number(startMs)), ("endDate", .number(endMs))]).data
        return classify(send("POST", path, body: body, environment: environment, decode: NotificationHistoryPage.init), "notification history")
    }

    /// Send Consumption Information v2: `PUT /inApps/v2/transactions/consumption/{transactionId}`;
    /// Apple answers 202 Accepted with no body.
    /// https://developer.apple.com/documentation/appstoreserverapi/send-consumption-information
    package func sendConsumptionInformation(transactionId: String, environment: AppleEnvironment, body: JSONValue) -> CallResult<Bool> {
        guard !transactionId.isEmpty, transactionId.count <= 64, transactionId.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isLetter) }) else {
            return .failed(.rejected(reason: .transactionNotFound, detail: "'\(transactionId.prefix(64))' is not an Apple transaction id"),
                           storeAnswered: true)
        }
        return classify(send("PUT", "/inApps/v2/transactions/consumption/\(transactionId)", body: body.data, environment: environment,
                             finalReason: .storeFinishRefused, decode: { _ in true }), "consumption information")
    }

    /// Finish Transaction: `POST /inApps/v1/transactions/{transactionId}/finish` in the
    /// transaction's own environment (no hop: settle verified it there), telling the App Store a
    /// server delivered it, as an app's `finish()` would. API 1.20.
    /// https://developer.apple.com/documentation/appstoreserverapi/finish-transaction
    package func finishTransaction(transactionId: String, environment: AppleEnvironment) -> CallResult<Bool> {
        guard !transactionId.isEmpty, transactionId.count <= 64, transactionId.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isLetter) }) else {
            return .failed(.rejected(reason: .transactionNotFound, detail: "'\(transactionId.prefix(64))' is not an Apple transaction id"),
                           storeAnswered: true)
        }
        return classify(send("POST", "/inApps/v1/transactions/\(transactionId)/finish", body: Data(), environment: environment,
                             finalReason: .storeFinishRefused, decode: { _ in true }), "Finish Transaction")
    }

    private func classify<Body>(_ answer: Answer<Body>, _ what: String) -> CallResult<Body> {
        switch answer {
        case let .found(body): return .ok(body)
        case .paginationExpired: return .paginationExpired
        case let .failed(outcome, answered): return .failed(outcome, storeAnswered: answered)
        case .unauthorized:
            return .failed(.configurationFault("the App Store Server API answered 401 to \(what): check server_api.issuer_id, key_id, private_key_file and bundle_id"),
                           storeAnswered: true)
        case .notFound: return .failed(.rejected(reason: .transactionNotFound, detail: "Apple answered 404 to \(what)"), storeAnswered: true)
        case let .invalidId(message): return .failed(.rejected(reason: .transactionNotFound, detail: message), storeAnswered: true)
        }
    }
}
