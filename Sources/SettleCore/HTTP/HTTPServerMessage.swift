import Foundation

/// A request as an `EmbeddedHTTPServer` hands it to its handler.
public struct HTTPServerRequest: Sendable {
    public var method: String
    /// The request target as sent, including any query string (e.g. "/v1/items?limit=5").
    public var path: String
    public var headers: [HTTPHeader]
    public var body: Data

    public init(method: String, path: String, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The target without its query string.
    public var pathWithoutQuery: Substring {
        path[..<(path.firstIndex(of: "?") ?? path.endIndex)]
    }

    /// Value of the last header called `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers.lastHeaderValue(named: name)
    }
}

/// What a handler answers. Content-Length, Connection and Transfer-Encoding are always
/// set by the server (it owns the framing), so handler-supplied values for them are ignored.
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: Data

    public init(status: Int, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func json(_ status: Int, _ body: Data) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [HTTPHeader("Content-Type", "application/json")], body: body)
    }
}
