
/// A bounds-checked, single-pass reader of ASN.1 BER for untrusted input (ITU-T X.690).
///
/// BER rather than DER only because Apple's own receipts are not all DER: Xcode (StoreKit testing)
/// receipts wrap the payload in indefinite lengths and a constructed OCTET STRING
/// (apple-protocol.md 3.6). DER is a subset of BER, so App Store receipts read the same way.
///
/// A cursor that steps into constructed elements (`enter`) and out again (`leave`), rather than
/// a reader that hands out whole elements: the end of an indefinite length is only known by
/// reading everything before it, and a cursor reads each element once. Handing out elements
/// would scan an indefinite subtree again at every level the caller descends, which a hostile
/// receipt can turn into seconds of CPU.
///
/// Every length is checked against the bytes that are actually there (and its enclosing
/// element), nesting is capped at `maximumDepth`, and nothing is copied except the segments of a
/// constructed string, so garbage of any shape ends in a `BERError`, never a trap.
/// https://www.itu.int/rec/T-REC-X.690
package struct BERReader {
    /// Deeper than anything in a receipt (its embedded certificates reach about 10) and shallow
    /// enough that hostile nesting cannot exhaust the stack.
    package static let maximumDepth = 32

    /// One constructed element the cursor is inside.
    private struct Frame {
        /// Where its contents end; `nil` for an indefinite length, which ends at end-of-contents.
        var end: Int?
        /// How far its contents may reach: its own end, or that of the nearest enclosing
        /// element with a definite length.
        var limit: Int
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int
    private var frames: [Frame] = []

    package init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    /// Where the next element starts, for error messages: an index into the buffer being read.
    package var offset: Int { position }

    private var limit: Int { frames.last?.limit ?? bytes.endIndex }

    /// Whether the element the cursor is in (or the whole buffer, at the top) has no more elements.
    package var isAtEnd: Bool {
        guard let frame = frames.last else { return position == bytes.endIndex }
        if let end = frame.end { return position == end }
        // X.690 8.1.5: two zero octets close an indefinite length.
        return limit - position >= 2 && bytes[position] == 0 && bytes[position + 1] == 0
    }

    /// Steps into the next element, which must be constructed and have this tag.
    package mutating func enter(_ expected: BERTag, _ what: @autoclosure () -> String) throws(BERError) {
        let header = try readHeader(what())
        guard header.tag == expected else { throw BERError("expected \(what())", at: header.offset) }
        try push(header)
    }

    /// Steps out of the element last entered, which must have no elements left.
    package mutating func leave(_ what: @autoclosure () -> String) throws(BERError) {
        guard isAtEnd else {
            let reason = position >= limit ? "truncated: missing end-of-contents" : "unexpected element at the end of \(what())"
            throw BERError(reason, at: position)
        }
        if frames.removeLast().end == nil { position += 2 }
    }

    /// Passes over the next element, checking its tag when one is given.
    package mutating func skip(_ expected: BERTag? = nil, _ what: @autoclosure () -> String) throws(BERError) {
        let header = try readHeader(what())
        if let expected, header.tag != expected { throw BERError("expected \(what())", at: header.offset) }
        if let length = header.length {
            position += length
            return
        }
        // An indefinite length: its end is only found by passing over everything inside.
        try push(header)
        while !isAtEnd { try skip(nil, "an element") }
        try leave("an element")
    }

    /// Skips whatever is left in the element last entered.
    package mutating func skipRest() throws(BERError) {
        while !isAtEnd { try skip(nil, "an element") }
    }

    /// The contents of the next element, which must be primitive and have this tag.
    package mutating func readPrimitive(_ expected: BERTag, _ what: @autoclosure () -> String) throws(BERError) -> BERPrimitive {
        let header = try readHeader(what())
        guard header.tag == expected, let length = header.length else {
            throw BERError("expected \(what())", at: header.offset)
        }
        defer { position += length }
        return BERPrimitive(contents: bytes[position ..< position + length], offset: header.offset)
    }

    /// The octets of the next element, a string of one of these universal types.
    ///
    /// BER (X.690 8.7.3, 8.23.6) lets a sender split any string into a constructed element of
    /// OCTET STRING segments; Xcode receipts do that to the payload. Segments are joined into a
    /// new buffer, so offsets in errors about its contents count from its start.
    package mutating func readString(_ types: [UInt32], _ what: @autoclosure () -> String) throws(BERError)
        -> (type: UInt32, octets: ArraySlice<UInt8>) {
        let header = try readHeader(what())
        guard header.tag.tagClass == .universal, types.contains(header.tag.number) else {
            throw BERError("expected \(what())", at: header.offset)
        }
        if let length = header.length, !header.tag.isConstructed {
            defer { position += length }
            return (header.tag.number, bytes[position ..< position + length])
        }
        try push(header)
        var joined: [UInt8] = []
        while !isAtEnd {
            joined += try readString([BERTag.octetString.number], "an OCTET STRING segment").octets
        }
        try leave(what())
        return (header.tag.number, joined[...])
    }

    private struct Header {
        var tag: BERTag
        /// `nil` for an indefinite length.
        var length: Int?
        var offset: Int
    }

    /// Reads identifier and length octets, leaving the cursor at the contents.
    private mutating func readHeader(_ what: @autoclosure () -> String) throws(BERError) -> Header {
        guard !isAtEnd else { throw BERError("missing \(what())", at: position) }
        let start = position
        let tag = try readTag()
        // X.690 8.1.5: end-of-contents only closes an indefinite length, which `isAtEnd` sees.
        guard tag != .endOfContents else { throw BERError("unexpected end-of-contents", at: start) }
        let length = try readLength()
        if let length {
            guard length <= limit - position else {
                let reason = limit == bytes.endIndex ? "truncated: a length of \(length) runs past the end of the data"
                    : "a length of \(length) runs past the end of the enclosing element"
                throw BERError(reason, at: start)
            }
        } else if !tag.isConstructed {
            // X.690 8.1.3.2: "the indefinite form ... shall be used only if the encoding is constructed".
            throw BERError("indefinite length on a primitive element", at: start)
        }
        return Header(tag: tag, length: length, offset: start)
    }

    private mutating func push(_ header: Header) throws(BERError) {
        guard header.tag.isConstructed else { throw BERError("expected a constructed element", at: header.offset) }
        guard frames.count < Self.maximumDepth else {
            throw BERError("nested deeper than \(Self.maximumDepth)", at: header.offset)
        }
        let end = header.length.map { position + $0 }
        frames.append(Frame(end: end, limit: end ?? limit))
    }

    /// X.690 8.1.2: identifier octets, in low-tag-number or high-tag-number form.
    private mutating func readTag() throws(BERError) -> BERTag {
        let start = position
        guard let first = nextByte() else { throw BERError("truncated: missing a tag", at: start) }
        // Two bits, four cases: the force unwrap cannot fail.
        let tagClass = BERTag.Class(rawValue: first >> 6)!
        let isConstructed = first & 0x20 != 0
        guard first & 0x1F == 0x1F else {
            return BERTag(tagClass: tagClass, isConstructed: isConstructed, number: UInt32(first & 0x1F))
        }
        var number: UInt32 = 0
        // Four base-128 digits give 28 bits, more than any tag a receipt uses; a longer run is garbage.
        for index in 0 ..< 4 {
            guard let byte = nextByte() else { throw BERError("truncated: incomplete tag", at: start) }
            // X.690 8.1.2.4.2 c): the first subsequent octet "shall not be 80 (hex)" (no padding).
            if index == 0 && byte == 0x80 { throw BERError("non-minimal tag number", at: start) }
            number = number << 7 | UInt32(byte & 0x7F)
            if byte & 0x80 == 0 {
                return BERTag(tagClass: tagClass, isConstructed: isConstructed, number: number)
            }
        }
        throw BERError("tag number too large", at: start)
    }

    /// X.690 8.1.3: length octets; `nil` means the indefinite form.
    private mutating func readLength() throws(BERError) -> Int? {
        let start = position
        guard let first = nextByte() else { throw BERError("truncated: missing a length", at: start) }
        if first < 0x80 { return Int(first) }
        if first == 0x80 { return nil }
        let count = Int(first & 0x7F)
        // X.690 8.1.3.5 c): 0xFF "shall not be used". Four octets already exceed any input we accept.
        guard first != 0xFF, count <= 4 else { throw BERError("length field of \(count) octets", at: start) }
        var length = 0
        for _ in 0 ..< count {
            guard let byte = nextByte() else { throw BERError("truncated: incomplete length", at: start) }
            length = length << 8 | Int(byte)
        }
        return length
    }

    private mutating func nextByte() -> UInt8? {
        guard position < limit else { return nil }
        defer { position += 1 }
        return bytes[position]
    }
}

/// The contents of a primitive element, and where the element starts.
package struct BERPrimitive {
    package var contents: ArraySlice<UInt8>
    package var offset: Int

    /// An INTEGER that fits in `Int`: larger values never occur where receipts use integers.
    package func integer() throws(BERError) -> Int {
        guard let first = contents.first else { throw BERError("empty INTEGER", at: offset) }
        guard contents.count <= MemoryLayout<Int>.size else { throw BERError("INTEGER too large", at: offset) }
        // Two's complement, big-endian (X.690 8.3.3): start from the sign, then shift in each octet.
        var value = first & 0x80 == 0 ? 0 : -1
        for byte in contents { value = value << 8 | Int(byte) }
        return value
    }

    /// The dotted form of an OBJECT IDENTIFIER (X.690 8.19), for error messages only.
    package func objectIdentifierText() -> String {
        var arcs: [UInt64] = []
        var arc: UInt64 = 0
        for byte in contents {
            guard arc >> 57 == 0 else { return "(invalid)" }
            arc = arc << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                if arcs.isEmpty {
                    let first = min(arc / 40, 2)
                    arcs += [first, arc - first * 40]
                } else {
                    arcs.append(arc)
                }
                arc = 0
            }
        }
        guard !arcs.isEmpty, contents.last.map({ $0 & 0x80 == 0 }) == true else { return "(invalid)" }
        return arcs.map(String.init).joined(separator: ".")
    }
}

/// An identifier: class, primitive or constructed, and number.
package struct BERTag: Equatable {
    package enum Class: UInt8 {
        case universal = 0, application, contextSpecific, `private`
    }

    package var tagClass: Class
    package var isConstructed: Bool
    package var number: UInt32

    package static let endOfContents = BERTag(tagClass: .universal, isConstructed: false, number: 0)
    package static let integer = BERTag(tagClass: .universal, isConstructed: false, number: 2)
    package static let octetString = BERTag(tagClass: .universal, isConstructed: false, number: 4)
    package static let objectIdentifier = BERTag(tagClass: .universal, isConstructed: false, number: 6)
    package static let utf8String = BERTag(tagClass: .universal, isConstructed: false, number: 12)
    package static let ia5String = BERTag(tagClass: .universal, isConstructed: false, number: 22)
    package static let sequence = BERTag(tagClass: .universal, isConstructed: true, number: 16)
    package static let set = BERTag(tagClass: .universal, isConstructed: true, number: 17)

    /// `[number]` EXPLICIT, as CMS tags its content.
    package static func explicit(_ number: UInt32) -> BERTag {
        BERTag(tagClass: .contextSpecific, isConstructed: true, number: number)
    }
}

/// Why BER input was rejected, and where.
package struct BERError: Error, Equatable, CustomStringConvertible {
    package var reason: String
    /// Index in the buffer being read of the element at fault.
    package var offset: Int

    package init(_ reason: String, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    package var description: String { "\(reason) (at byte \(offset))" }
}
