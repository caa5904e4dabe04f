import Foundation

/// What a legacy app receipt says about its in-app purchases. Parsing checks no signature
/// (`AppReceiptSignature` does), and even a signed receipt is only a lookup key for the App
/// Store Server API.
///
/// The same job as `ReceiptUtility.extractTransactionId(appReceipt:)` in Apple's server libraries
/// (apple-protocol.md 3.6), but it keeps every purchase rather than picking one id, so settle can
/// try each id it finds. A client can put any id in a receipt it forges; the App Store Server API's
/// answer, not this, is what says a purchase happened.
/// https://developer.apple.com/documentation/appstorereceipts/validating_receipts_on_the_device
package struct AppReceipt: Sendable, Equatable {
    /// One type-17 attribute: an in-app purchase receipt.
    ///
    /// When a field's attribute appears more than once, the first is kept, as Apple's Python and
    /// Node libraries do. Empty strings (Apple leaves absent dates empty) read as `nil`.
    package struct Purchase: Sendable, Equatable {
        /// Attribute 1702.
        package var productId: String?
        /// Attribute 1703.
        package var transactionId: String?
        /// Attribute 1705.
        package var originalTransactionId: String?
        /// Attribute 1701.
        package var quantity: Int?
        /// Attribute 1704: RFC 3339 text as stored, not parsed, since settle only passes it on.
        package var purchaseDate: String?

        package init(productId: String? = nil, transactionId: String? = nil, originalTransactionId: String? = nil,
                    quantity: Int? = nil, purchaseDate: String? = nil) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.quantity = quantity
            self.purchaseDate = purchaseDate
        }
    }

    /// Attribute 2.
    package var bundleId: String?
    /// Attribute 0 when present: `Production`, `ProductionSandbox`, `Sandbox` or `Xcode`, kept as
    /// text so a value Apple adds later still reads.
    package var environment: String?
    /// Every type-17 attribute, in file order.
    package var purchases: [Purchase]
    /// Attribute 12, RFC 3339 text as stored: the time the receipt's signature is checked at.
    package var creationDate: String?

    package init(bundleId: String? = nil, environment: String? = nil, purchases: [Purchase] = [], creationDate: String? = nil) {
        self.bundleId = bundleId
        self.environment = environment
        self.purchases = purchases
        self.creationDate = creationDate
    }

    /// The largest receipt accepted. Real ones are a few KB, and even a receipt with thousands of
    /// purchases stays under 4 MiB; the cap bounds the memory and time one request can cost.
    package static let maximumSize = 16 << 20

    /// Every distinct transaction id (1703, then 1705) in file order — what settle looks up.
    ///
    /// Any id of the customer works for Get Transaction History, so the order only makes runs
    /// reproducible; it does not say which purchase the client is claiming.
    package var transactionIds: [String] {
        var seen: Set<String> = []
        var ids: [String] = []
        for purchase in purchases {
            for id in [purchase.transactionId, purchase.originalTransactionId].compactMap({ $0 })
            where seen.insert(id).inserted {
                ids.append(id)
            }
        }
        return ids
    }

    /// Parses a base64 app receipt (as devices upload it).
    ///
    /// Line breaks and spaces are ignored, since receipts often arrive wrapped at 64 or 76 columns;
    /// any other character outside the base64 alphabet is an error.
    package static func parse(base64: String) throws(AppReceiptError) -> AppReceipt {
        try parse(der: try der(base64: base64))
    }

    /// The receipt's bytes from its base64 text, refusing what is recognisably something else.
    package static func der(base64: String) throws(AppReceiptError) -> Data {
        // Base64 is 4/3 of the bytes it encodes; twice the cap leaves room for line breaks while
        // refusing a huge string before anything is allocated for it.
        guard base64.utf8.count <= 2 * maximumSize else { throw .tooLarge }
        let compact = Data(base64.utf8.filter { !isBase64Whitespace($0) })
        guard !compact.isEmpty else { throw .empty }
        if looksLikeJWS(compact) { throw .jws }
        guard let der = Data(base64Encoded: compact) else { throw .notBase64 }
        if TransactionReceipt.looksLikePlist(der) { throw .transactionReceiptFormat }
        return der
    }

    /// Parses the DER (or BER) bytes of an app receipt: a PKCS#7 signedData `ContentInfo`.
    package static func parse(der: Data) throws(AppReceiptError) -> AppReceipt {
        guard !der.isEmpty else { throw .empty }
        guard der.count <= maximumSize else { throw .tooLarge }
        let bytes = [UInt8](der)
        let payload: ArraySlice<UInt8>
        do {
            payload = try encapsulatedContent(of: bytes[...])
        } catch {
            throw .notSignedData(error.description)
        }
        do {
            return try decodePayload(payload)
        } catch {
            throw .malformedPayload(error.description)
        }
    }

    private static func isBase64Whitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t")
    }

    /// A compact JWS is three base64url parts joined by dots, and its header is a JSON object,
    /// so it starts with `eyJ` (`{"`).
    private static func looksLikeJWS(_ text: Data) -> Bool {
        text.starts(with: "eyJ".utf8) && text.count(where: { $0 == UInt8(ascii: ".") }) == 2
    }
}
