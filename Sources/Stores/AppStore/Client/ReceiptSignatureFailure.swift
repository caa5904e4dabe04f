
/// Why an app receipt's PKCS#7 signature was refused (apple-protocol.md 3.7). `code` is a
/// short stable string for status, logs and metric labels; the associated text is the detail.
///
/// None is worth retrying: the check is a pure function of the receipt and the configured roots.
package enum ReceiptSignatureFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a PKCS#7 app receipt at all (not base64, not signedData, a malformed payload, or an
    /// iOS 6 transaction receipt).
    case unreadable(AppReceiptError)
    /// A signedData with no SignerInfo: nobody signed it.
    case unsigned
    /// Attribute 12 (receipt creation date) is missing or not RFC 3339, so there is no time to
    /// check the certificates at.
    case creationDateInvalid(String)
    /// The signer's certificate does not chain to a configured receipt root at the creation date.
    case chainInvalid(String)
    /// The signature does not verify over the content (altered after signing), or the signer's
    /// certificate is not in the receipt.
    case signatureInvalid(String)

    package var code: String {
        switch self {
        case .unreadable: return "receipt_unreadable"
        case .unsigned: return "receipt_unsigned"
        case .creationDateInvalid: return "receipt_creation_date_invalid"
        case .chainInvalid: return "receipt_chain_invalid"
        case .signatureInvalid: return "receipt_signature_invalid"
        }
    }

    package var description: String {
        switch self {
        case let .unreadable(error): return "\(code): \(error)"
        case .unsigned: return "\(code): the PKCS#7 signedData has no signer"
        case let .creationDateInvalid(detail), let .chainInvalid(detail), let .signatureInvalid(detail):
            return "\(code): \(detail)"
        }
    }
}
