/// Why an HTTP exchange failed to produce a response.
///
/// Grouped so a caller can act on it; `description` is safe to log (never contains request bodies, headers or URLs' query strings).
package struct HTTPError: Error, Sendable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// The server could not be reached (DNS failure, connection refused, ...). Nothing was sent.
        case connect
        /// The connect or total timeout elapsed. The request may or may not have been processed.
        case timeout
        /// TLS handshake or certificate verification failed.
        case tls
        /// The response body exceeded `HTTPClientConfiguration.maxResponseBytes`; the transfer was aborted.
        case responseTooLarge
        /// Anything else (malformed URL, disallowed scheme, connection reset, protocol error, ...).
        case transport
    }

    package var kind: Kind
    /// Human-readable detail. Built only from libcurl's diagnostics (which name hosts and
    /// ports but never payloads) and additionally scrubbed of the request's secrets.
    package var message: String

    package init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String {
        "HTTP \(kind.rawValue) error: \(message)"
    }
}
