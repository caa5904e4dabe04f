import COpenSSL

/// A failure at the OpenSSL boundary: a certificate or key that cannot be read, or an
/// operation OpenSSL refused.
///
/// Messages name what was being done and OpenSSL's reason text, never key material or
/// PEM contents: they end up in logs and in `settle status`.
package struct CryptoError: Error, Sendable, CustomStringConvertible {
    package var message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }

    /// An error for a failed OpenSSL call, with the reason OpenSSL recorded for it.
    ///
    /// The queue is cleared afterwards: it is per thread, and a stale entry would otherwise
    /// be reported against some unrelated later call on the same thread.
    package static func openSSL(_ what: String) -> CryptoError {
        let reason = OpenSSLErrorQueue.drain()
        return CryptoError(reason.map { "\(what) (OpenSSL: \($0))" } ?? what)
    }
}

/// Access to OpenSSL's per-thread error queue.
package enum OpenSSLErrorQueue {
    /// Empties the queue and returns the reason text of its oldest entry, if any.
    ///
    /// Only the reason string is used (e.g. "unsupported", "bad decrypt"): it is static
    /// text in OpenSSL, whereas an entry's free-form "data" could echo input.
    @discardableResult
    package static func drain() -> String? {
        // ERR_peek_error returns "the earliest error code from the thread's error queue
        // without modifying it" (ERR_get_error(3)). The earliest entry is the root cause
        // (e.g. "wrong tag"); later ones tend to be generic ("nested asn1 error").
        let code = ERR_peek_error()
        ERR_clear_error()
        guard code != 0, let reason = ERR_reason_error_string(code) else { return nil }
        return String(cString: reason)
    }
}
