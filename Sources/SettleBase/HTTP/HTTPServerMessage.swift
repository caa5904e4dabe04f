import Foundation

/// A request as an `EmbeddedHTTPServer` hands it to its handler.
package struct HTTPServerRequest: Sendable {
    package var method: String
    /// The request target as sent, including any query string (e.g. "/v1/items?limit=5").
    package var path: String
    package var headers: [HTTPHeader]
    package var body: Data
    /// Who sent it (the peer's address), when libmicrohttpd knows.
    package var client: ListenAddress?

    package init(method: String, path: String, headers: [HTTPHeader] = [], body: Data = Data(), client: ListenAddress? = nil) {
        (self.method, self.path, self.headers, self.body) = (method, path, headers, body)
        self.client = client
    }

    /// The target without its query string.
    package var pathWithoutQuery: Substring {
        path[..<(path.firstIndex(of: "?") ?? path.endIndex)]
    }

    /// Value of the last header called `name` (case-insensitive), or nil.
    package func header(_ name: String) -> String? {
        headers.lastHeaderValue(named: name)
    }
}

/// What a handler answers. Content-Length, Connection and Transfer-Encoding are always
/// set by the server (it owns the framing), so handler-supplied values for them are ignored.
package struct HTTPServerResponse: Sendable {
    package var status: Int
    package var headers: [HTTPHeader]
    package var body: Data

    package init(status: Int, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package static func json(_ status: Int, _ body: Data) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")], body: body)
    }
}
