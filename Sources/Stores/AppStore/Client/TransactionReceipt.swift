import Foundation

/// An iOS 6-style transaction receipt (`SKPaymentTransaction.transactionReceipt`): base64 of a
/// text plist `{ "signature" = "..."; "purchase-info" = "<base64>"; ... }` whose
/// `purchase-info` is itself base64 of a plist naming the transaction (apple-protocol.md 1.7).
///
/// The ids in it are the client's word: settle checks none of the proprietary signature, so an
/// id read here is only a lookup key, exactly as for `AppReceipt`.
/// https://developer.apple.com/documentation/storekit/skpaymenttransaction/transactionreceipt
package enum TransactionReceipt {
    /// The `transaction-id` of a transaction receipt given as base64 text, the way Apple's server
    /// libraries' `ReceiptUtility.extractTransactionIdFromTransactionReceipt` reads it; nil when
    /// the text is not that format.
    package static func transactionId(base64: String) -> String? {
        purchaseInfo(base64: base64).flatMap { firstCapture(#""transaction-id"\s+=\s+"([a-zA-Z0-9+/=]+)";"#, in: $0) }
    }

    /// The `bid` (bundle id) the purchase info names, nil when it names none or the text is not
    /// a transaction receipt.
    package static func bundleId(base64: String) -> String? {
        purchaseInfo(base64: base64).flatMap { firstCapture(#""bid"\s+=\s+"([^"]*)";"#, in: $0) }
    }

    /// The decoded `purchase-info` plist text.
    private static func purchaseInfo(base64: String) -> String? {
        guard base64.utf8.count <= 2 * AppReceipt.maximumSize,
              let text = decodedText(base64),
              let purchaseInfo = firstCapture(#""purchase-info"\s+=\s+"([a-zA-Z0-9+/=]+)";"#, in: text) else { return nil }
        return decodedText(purchaseInfo)
    }

    /// Whether decoded receipt bytes are a text plist rather than DER: a PKCS#7 `ContentInfo`
    /// starts with a SEQUENCE tag (0x30), an old-style plist with `{` after optional whitespace.
    static func looksLikePlist(_ bytes: Data) -> Bool {
        bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{")
    }

    private static func decodedText(_ base64: String) -> String? {
        let compact = base64.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: compact) else { return nil }
        return String(data: data, encoding: .utf8)
    }

    private static func firstCapture(_ pattern: String, in text: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: pattern),
              let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
              let range = Range(match.range(at: 1), in: text) else { return nil }
        return String(text[range])
    }
}
