import Foundation

/// OAuth 2.0 client credentials (RFC 6749 section 4.4): the app's id and secret posted as a form
/// to a token endpoint, answered with an access token and its lifetime. The stores that
/// authenticate an app this way (HMS IAP, ONE store) share this exchange and keep their own cache.
package enum ClientCredentials {
    package enum Failure: Error, Sendable, Equatable {
        /// The endpoint refused the credentials (HTTP 400, 401 or 403): settle's setup is wrong.
        case refused(status: Int)
        /// No token: no answer, or one without a token.
        case unavailable(String)
    }

    /// The token and its lifetime in seconds (bounded to a minute to a day; an hour when unsaid).
    package static func exchange(url: String, clientId: String, secret: String, headers: [HTTPHeader] = [],
                                 http: HTTPClient) -> Result<(token: String, lifetime: Int64), Failure> {
        func form(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        let body = "grant_type=client_credentials&client_id=\(form(clientId))&client_secret=\(form(secret))"
        let request = HTTPRequest(method: "POST", url: url,
                                  headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded;charset=UTF-8")] + headers,
                                  body: Data(body.utf8))
        let response: HTTPResponse
        do {
            response = try http.send(request)
        } catch {
            return .failure(.unavailable("did not answer: \(error)"))
        }
        let json = try? JSONValue.parse(response.body)
        guard (200...299).contains(response.status), let token = json?["access_token"]?.looseString, !token.isEmpty else {
            if [400, 401, 403].contains(response.status) { return .failure(.refused(status: response.status)) }
            return .failure(.unavailable("answered HTTP \(response.status) without a token"))
        }
        return .success((token, min(max(json?["expires_in"]?.looseInt64 ?? 3600, 60), 86_400)))
    }
}
