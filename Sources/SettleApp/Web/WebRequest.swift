import Foundation
import SettleBase
import SettleModel

/// One request as the console's pages see it: the decoded path, the query and form fields, and
/// who is asking. Form bodies are read here and nowhere logged: a purchase token arrives in one.
struct WebRequest: Sendable {
    var method: String
    /// The path without its query, percent-decoded segment by segment.
    var segments: [String]
    var query: [String: String]
    var form: [String: String]
    var headers: [HTTPHeader]
    /// The operator: the basic-auth user, or "local" when the console has no users file.
    var operatorName: String
    /// Who sent it: the TCP peer, or the forwarded client behind a trusted proxy (`ClientAddress`).
    var client: String
    /// What the operator may do: the users file's or `web.roles`' word; admin without users.
    var role: OperatorRole

    init(_ request: HTTPServerRequest, operatorName: String, client: String = "unknown", role: OperatorRole = .admin) {
        self.client = client
        self.role = role
        method = request.method
        let target = request.path
        let path = target[..<(target.firstIndex(of: "?") ?? target.endIndex)]
        segments = path.split(separator: "/", omittingEmptySubsequences: true).map { String($0).removingPercentEncoding ?? String($0) }
        query = target.firstIndex(of: "?").map { Self.fields(String(target[target.index(after: $0)...])) } ?? [:]
        let type = request.header("Content-Type") ?? ""
        form = request.method == "POST" && type.lowercased().hasPrefix("application/x-www-form-urlencoded")
            ? Self.fields(String(decoding: request.body, as: UTF8.self)) : [:]
        headers = request.headers
        self.operatorName = operatorName
    }

    func header(_ name: String) -> String? { headers.lastHeaderValue(named: name) }

    /// `a=1&b=two+words`: application/x-www-form-urlencoded (a URL's query too). A repeated name
    /// keeps its first value.
    static func fields(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            let name = decode(parts[0])
            if out[name] == nil { out[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return out
    }

    /// Whether the browser says the request comes from another site. `Sec-Fetch-Site`, which
    /// every current browser sends, decides when present (same-origin, or none: typed or
    /// bookmarked). Without it, an `Origin` must name this host; `Origin: null` (what a browser
    /// sends under `Referrer-Policy: no-referrer`, and from a sandboxed frame) is refused then.
    var isCrossSite: Bool {
        if let site = header("Sec-Fetch-Site")?.lowercased() { return !["same-origin", "none"].contains(site) }
        guard let origin = header("Origin") else { return false }
        guard let components = URLComponents(string: origin), let host = components.host, let own = header("Host")?.lowercased() else {
            return true
        }
        let port = components.port.map { ":\($0)" } ?? ""
        return ![host + port, "[\(host)]" + port].map { $0.lowercased() }.contains(own)
    }
}
