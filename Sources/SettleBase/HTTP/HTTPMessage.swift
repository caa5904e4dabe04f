import Foundation

/// One header field.
///
/// Headers are kept as an ordered list rather than a dictionary because HTTP allows a
/// field to repeat and some consumers care about order; lookups go through
/// `header(_:)`, which applies HTTP's case-insensitive name rule.
package struct HTTPHeader: Sendable, Equatable {
    package var name: String
    package var value: String

    package init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request for `HTTPClient.send(_:)`.
package struct HTTPRequest: Sendable {
    /// "GET", "POST", ... (HTTP methods are case-sensitive, so this is sent exactly as given).
    package var method: String
    package var url: String
    package var headers: [HTTPHeader]
    package var body: Data

    package init(method: String, url: String, headers: [HTTPHeader] = [], body: Data = Data()) {
        (self.method, self.url, self.headers, self.body) = (method, url, headers, body)
    }
}

/// A final HTTP response. Any status (including 4xx/5xx) is a response, not an error:
/// only failures to complete the exchange surface as `HTTPError`.
package struct HTTPResponse: Sendable {
    package var status: Int
    /// As received, for the final response only (no 100-continue or other interim headers).
    package var headers: [HTTPHeader]
    package var body: Data

    package init(status: Int, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Value of the last header called `name` (case-insensitive), or nil.
    package func header(_ name: String) -> String? {
        headers.lastHeaderValue(named: name)
    }
}

extension Array where Element == HTTPHeader {
    /// Last occurrence wins: for the singleton fields callers look up (Content-Type,
    /// Retry-After, ...) a repeated field is a server bug, and the latest value is the
    /// conventional tie-break.
    package func lastHeaderValue(named name: String) -> String? {
        for header in reversed() where httpHeaderNamesEqual(header.name, name) {
            return header.value
        }
        return nil
    }
}

/// HTTP field names are ASCII and case-insensitive. Folding only ASCII letters avoids
/// `lowercased()`'s allocation and Unicode rules, which don't apply to field names.
package func httpHeaderNamesEqual(_ lhs: String, _ rhs: String) -> Bool {
    var left = lhs.utf8.makeIterator()
    var right = rhs.utf8.makeIterator()
    while true {
        switch (left.next(), right.next()) {
        case (nil, nil):
            return true
        case let (l?, r?):
            if asciiLowercased(l) != asciiLowercased(r) { return false }
        default:
            return false
        }
    }
}

@inline(__always)
private func asciiLowercased(_ byte: UInt8) -> UInt8 {
    (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
}
