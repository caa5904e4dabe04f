
/// Why an app receipt could not be read.
///
/// Never retryable: the same bytes fail the same way. `message` names what was wrong and, for
/// malformed ASN.1, a byte offset; it never quotes the receipt, so it is safe to log and to store
/// as an order's last error.
package struct AppReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String

    package init(message: String) {
        self.message = message
    }

    package var description: String { "app receipt: \(message)" }

    package static let notBase64 = AppReceiptError(message: "not base64")
    package static let empty = AppReceiptError(message: "empty receipt")
    package static let tooLarge = AppReceiptError(message: "receipt larger than \(AppReceipt.maximumSize >> 20) MiB")
    /// Clients migrating to StoreKit 2 send signed transactions where a receipt used to go; saying
    /// so saves the operator from decoding the base64 by hand.
    package static let jws = AppReceiptError(message: "a StoreKit 2 JWS, not a legacy app receipt")
    /// An iOS 6-style transaction receipt (a text plist), which has no PKCS#7 to read; public so
    /// a caller can recognise it and fall back to `TransactionReceipt.transactionId(base64:)`.
    package static let transactionReceiptFormat = AppReceiptError(
        message: "an iOS 6-style transaction receipt (text plist), not a PKCS#7 app receipt")

    package static func notSignedData(_ detail: String) -> AppReceiptError {
        AppReceiptError(message: "not a PKCS#7 signedData receipt: \(detail)")
    }

    package static func malformedPayload(_ detail: String) -> AppReceiptError {
        AppReceiptError(message: "malformed receipt payload: \(detail)")
    }
}
