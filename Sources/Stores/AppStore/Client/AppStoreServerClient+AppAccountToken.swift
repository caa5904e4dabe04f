import Foundation
import SettleBase
import SettleModel

extension AppStoreServerClient {
    /// What Apple said to Set App Account Token.
    package enum AccountTokenAnswer: Sendable, Equatable {
        /// 200: the purchase, its renewals and plan changes carry the token from now on.
        case set
        /// A 4xx that the same request would get again: 4000185 (a family member's shared
        /// purchase), 4000183, 4000187, 404 and the like. Never retried.
        case refused(status: Int, errorCode: Int?, message: String)
        /// No answer, 5xx, 429 or Apple's retryable codes: later, with backoff.
        case temporary(String, retryAfter: Double?)
        /// 401 or 403: the credentials, not the purchase. Later, and shown.
        case configurationFault(String)
        /// Held back by the pacer, or a 429 above the bucket's floor ("paced: ..."): again at
        /// the next pass, no attempt used.
        case paced(String)
    }

    /// Set App Account Token (API 1.16): `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
    /// with `{"appAccountToken": UUID}`. Its own request rather than `send`'s classification,
    /// which retries every other 4xx: here a 4xx is Apple's final word on this purchase, and
    /// Apple's error code is what a person reads.
    /// https://developer.apple.com/documentation/appstoreserverapi/set-app-account-token
    package func setAppAccountToken(originalTransactionId id: String, token: String,
                                    environment: AppleEnvironment) -> AccountTokenAnswer {
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isNumber || $0.isLetter) }) else {
            return .refused(status: 0, errorCode: nil, message: "'\(id.prefix(64))' is not an Apple original transaction id")
        }
        let name = "\(environment.rawValue.lowercased()) App Store Server API"
        let bearer: String
        do {
            bearer = try tokens.token()
        } catch {
            return .configurationFault("cannot sign the App Store Server API token: \(error)")
        }
        let base = environment == .production ? productionURL : sandboxURL
        let url = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/inApps/v1/transactions/\(id)/appAccountToken"
        let body = JSONValue.object([("appAccountToken", .string(token))]).data
        let request = HTTPRequest(method: "PUT", url: url, headers: [HTTPHeader("Authorization", "Bearer \(bearer)"),
                                                                    HTTPHeader("Accept", "application/json"),
                                                                    HTTPHeader("Content-Type", "application/json")], body: body)
        let key = pacerKey("PUT", "/inApps/v1/transactions/\(id)/appAccountToken", environment: environment)
        if let refusal = pace(key) { return .paced("\(refusal)") }
        let started = DispatchTime.now()
        let (answer, label) = exchangeAccountToken(request, name: name, key: key)
        observe?(environment, label, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
        return answer
    }

    private func exchangeAccountToken(_ request: HTTPRequest, name: String, key: PacerKey) -> (AccountTokenAnswer, String) {
        let response: HTTPResponse
        do {
            response = try client.send(request)
        } catch {
            return (.temporary("\(name): \(error)", retryAfter: nil), error.kind.rawValue)
        }
        let atFloor = paced(key, response)
        let json = try? JSONValue.parse(response.body)
        let code = json?["errorCode"]?.looseInt64.map { Int($0) }
        let message = json?["errorMessage"]?.looseString.map { String($0.prefix(200)) } ?? "HTTP \(response.status)"
        switch response.status {
        case 200...299:
            return (.set, "found")
        case 401, 403:
            return (.configurationFault("\(name) answered HTTP \(response.status) to Set App Account Token: check server_api.issuer_id, "
                                        + "key_id, private_key_file and bundle_id"), "http_\(response.status)")
        case 429:
            let retryAfter = RetryAfter.seconds(response.header("Retry-After"), now: Date(timeIntervalSince1970: Double(tokens.time.unixSeconds)))
            if atFloor == false, let bucket = pacer?.bucket(key) {
                return (.paced(Self.pacedBy429(key, bucket, retryAfter: retryAfter, who: name)), "http_429")
            }
            return (.temporary("\(name) answered HTTP 429 (rate limited)", retryAfter: retryAfter), "http_429")
        case 404 where [4040002, 4040004, 4040006].contains(code):
            return (.temporary("\(name): temporary error \(code!)", retryAfter: nil), "retryable_\(code!)")
        case 400...499:
            return (.refused(status: response.status, errorCode: code, message: message), "http_4xx")
        default:
            return (.temporary("\(name) answered HTTP \(response.status)" + (code.map { " (error \($0))" } ?? ""), retryAfter: nil),
                    "http_5xx")
        }
    }
}
