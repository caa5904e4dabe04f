
/// Reading the receipt's ASN.1: the PKCS#7 envelope, then the payload inside it.
///
/// Layout (apple-protocol.md 3.6, RFC 5652 section 3 and 5.1):
///
///     ContentInfo ::= SEQUENCE { contentType OID (signedData), content [0] EXPLICIT SignedData }
///     SignedData ::= SEQUENCE { version INTEGER, digestAlgorithms SET, encapContentInfo, ... }
///     encapContentInfo ::= SEQUENCE { eContentType OID (data), eContent [0] EXPLICIT OCTET STRING }
///     payload ::= SET OF ReceiptAttribute
///     ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }
///
/// Certificates and signer infos after `encapContentInfo` are only passed over here: the
/// signature is `AppReceiptSignature`'s business.
extension AppReceipt {
    /// 1.2.840.113549.1.7.2, id-signedData (RFC 5652 section 5.1).
    private static let signedDataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    /// 1.2.840.113549.1.7.1, id-data: what every App Store and Xcode receipt encapsulates.
    private static let dataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]

    private enum AttributeType {
        static let environment = 0
        static let bundleId = 2
        static let creationDate = 12
        static let inAppPurchase = 17
        static let quantity = 1701
        static let productId = 1702
        static let transactionId = 1703
        static let purchaseDate = 1704
        static let originalTransactionId = 1705
    }

    /// The payload octets from `encapContentInfo.eContent`, joined if BER split them.
    package static func encapsulatedContent(of bytes: ArraySlice<UInt8>) throws(BERError) -> ArraySlice<UInt8> {
        // Checked before reading lengths so that arbitrary bytes get the plain answer rather than
        // a complaint about whatever their second byte happens to mean.
        guard bytes.first == 0x30 else { throw BERError("expected a ContentInfo SEQUENCE", at: bytes.startIndex) }
        var reader = BERReader(bytes)
        try reader.enter(.sequence, "a ContentInfo SEQUENCE")
        let contentType = try reader.readPrimitive(.objectIdentifier, "the content type OID")
        guard contentType.contents.elementsEqual(signedDataOID) else {
            throw BERError("content type is \(contentType.objectIdentifierText())", at: contentType.offset)
        }
        try reader.enter(.explicit(0), "the [0] content")
        try reader.enter(.sequence, "a SignedData SEQUENCE")
        try reader.skip(.integer, "the SignedData version")
        try reader.skip(.set, "the digestAlgorithms SET")
        try reader.enter(.sequence, "the encapContentInfo SEQUENCE")
        let contentTypeInside = try reader.readPrimitive(.objectIdentifier, "the eContentType OID")
        guard contentTypeInside.contents.elementsEqual(dataOID) else {
            throw BERError("eContentType is \(contentTypeInside.objectIdentifierText()), not data", at: contentTypeInside.offset)
        }
        // Absent only in a detached signature, which would carry no receipt at all.
        try reader.enter(.explicit(0), "the [0] eContent")
        let payload = try reader.readString([BERTag.octetString.number], "the eContent OCTET STRING").octets
        try reader.leave("the [0] eContent")
        try reader.leave("encapContentInfo")
        // Certificates and signerInfos: passed over, but read, so a cut-off receipt is still caught.
        try reader.skipRest()
        try reader.leave("SignedData")
        try reader.leave("the [0] content")
        try reader.leave("ContentInfo")
        guard reader.isAtEnd else { throw BERError("trailing bytes after the ContentInfo", at: reader.offset) }
        return payload
    }

    package static func decodePayload(_ payload: ArraySlice<UInt8>) throws(BERError) -> AppReceipt {
        var receipt = AppReceipt()
        try readAttributes(payload, "payload") { attribute throws(BERError) in
            switch attribute.type {
            case AttributeType.environment where receipt.environment == nil:
                receipt.environment = try attribute.string()
            case AttributeType.bundleId where receipt.bundleId == nil:
                receipt.bundleId = try attribute.string()
            case AttributeType.creationDate where receipt.creationDate == nil:
                receipt.creationDate = try attribute.string()
            case AttributeType.inAppPurchase:
                receipt.purchases.append(try decodePurchase(attribute.value))
            default:
                // Apple adds attribute types without notice; those settle does not use are skipped.
                break
            }
        }
        return receipt
    }

    /// A type-17 value: a DER `SET OF ReceiptAttribute` of its own.
    private static func decodePurchase(_ value: ArraySlice<UInt8>) throws(BERError) -> Purchase {
        var purchase = Purchase()
        try readAttributes(value, "in-app purchase receipt") { attribute throws(BERError) in
            switch attribute.type {
            case AttributeType.quantity where purchase.quantity == nil:
                purchase.quantity = try attribute.integer()
            case AttributeType.productId where purchase.productId == nil:
                purchase.productId = try attribute.string()
            case AttributeType.transactionId where purchase.transactionId == nil:
                purchase.transactionId = try attribute.string()
            case AttributeType.purchaseDate where purchase.purchaseDate == nil:
                purchase.purchaseDate = try attribute.string()
            case AttributeType.originalTransactionId where purchase.originalTransactionId == nil:
                purchase.originalTransactionId = try attribute.string()
            default:
                break
            }
        }
        return purchase
    }

    /// Calls `body` with each attribute of a buffer holding exactly one `SET OF ReceiptAttribute`.
    private static func readAttributes(_ bytes: ArraySlice<UInt8>, _ what: String,
                                       _ body: (ReceiptAttribute) throws(BERError) -> Void) throws(BERError) {
        var reader = BERReader(bytes)
        try reader.enter(.set, "a SET of attributes in the \(what)")
        while !reader.isAtEnd {
            let offset = reader.offset
            try reader.enter(.sequence, "a ReceiptAttribute SEQUENCE")
            let type = try reader.readPrimitive(.integer, "the attribute type").integer()
            // Apple documents the version as unused; only its presence is part of the format.
            try reader.skip(.integer, "the attribute version")
            let value = try reader.readString([BERTag.octetString.number], "the attribute value").octets
            try reader.leave("attribute \(type)")
            try body(ReceiptAttribute(type: type, value: value, offset: offset))
        }
        try reader.leave("the \(what)")
        guard reader.isAtEnd else { throw BERError("trailing bytes after the \(what)", at: reader.offset) }
    }
}

/// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
private struct ReceiptAttribute {
    var type: Int
    /// The value's octets: itself one DER element, whose type depends on `type`.
    var value: ArraySlice<UInt8>
    /// Where the attribute starts, for error messages.
    var offset: Int

    /// A UTF8String (ids, bundle id) or IA5String (dates) inside the value; `nil` when empty,
    /// as Apple writes dates that do not apply.
    func string() throws(BERError) -> String? {
        guard !value.isEmpty else { return nil }
        var reader = BERReader(value)
        let utf8 = BERTag.utf8String.number, ia5 = BERTag.ia5String.number
        guard let (stringType, octets) = try? reader.readString([utf8, ia5], "a string"), reader.isAtEnd else {
            throw BERError("attribute \(type) is not a UTF8String or IA5String", at: offset)
        }
        guard !(stringType == ia5 && octets.contains(where: { $0 >= 0x80 })),
              let text = String(validating: octets, as: UTF8.self) else {
            throw BERError("attribute \(type) is not valid \(stringType == ia5 ? "ASCII" : "UTF-8")", at: offset)
        }
        return text.isEmpty ? nil : text
    }

    /// An INTEGER inside the value; `nil` when the value is empty.
    func integer() throws(BERError) -> Int? {
        guard !value.isEmpty else { return nil }
        var reader = BERReader(value)
        guard let integer = try? reader.readPrimitive(.integer, "an INTEGER").integer(), reader.isAtEnd else {
            throw BERError("attribute \(type) is not an INTEGER that fits in 64 bits", at: offset)
        }
        return integer
    }
}
