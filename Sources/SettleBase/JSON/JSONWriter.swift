import Foundation

extension JSONValue {
    /// Serialises the value. `pretty` indents with two spaces (for people); the compact
    /// form is used on the wire and in hook payloads.
    package func serialized(pretty: Bool = false) -> String {
        String(decoding: bytes(pretty: pretty), as: UTF8.self)
    }

    package var data: Data { Data(bytes(pretty: false)) }

    /// The UTF-8 of `serialized(pretty:)`. Written as bytes: appending to a `String` piece by
    /// piece (about 20 appends a member) cost 50 K instructions a hook payload, 3 % of a pass.
    private func bytes(pretty: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    private func write(to out: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null".utf8
        case let .bool(b): out += (b ? "true" : "false").utf8
        case let .number(n): out += n.utf8
        case let .string(s): JSONValue.writeString(s, to: &out)
        case let .array(items):
            if items.isEmpty { out += "[]".utf8; return }
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { JSONValue.newline(&out, indent: indent + 1) }
                item.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { JSONValue.newline(&out, indent: indent) }
            out.append(UInt8(ascii: "]"))
        case let .object(members):
            if members.isEmpty { out += "{}".utf8; return }
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { JSONValue.newline(&out, indent: indent + 1) }
                JSONValue.writeString(key, to: &out)
                out += (pretty ? ": " : ":").utf8
                value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { JSONValue.newline(&out, indent: indent) }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A line break and two spaces per level (the pretty form).
    private static func newline(_ out: inout [UInt8], indent: Int) {
        out.append(UInt8(ascii: "\n"))
        out += repeatElement(UInt8(ascii: " "), count: 2 * indent)
    }

    /// A JSON string as RFC 8259 section 7 writes it: the quote, the backslash and every
    /// control character escaped. RFC 8259 only requires C0 to be, but DEL and C1 are escaped
    /// too (as `\u007f`, which any parser reads back as the same character): output with none
    /// of them raw is what a terminal shows safely, so nothing after the serializer changes it.
    private static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, base64 receipts, keys) need no escape: appended whole, not one
        // scalar at a time (which was 8% of a pass's instructions). 0xC2 leads every C1
        // control in UTF-8 (U+0080...U+009F); a string with one takes the careful path.
        let plain = { (byte: UInt8) in byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0x7F && byte != 0xC2 }
        if s.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(plain) }) ?? s.utf8.allSatisfy(plain) {
            out += s.utf8
            out.append(UInt8(ascii: "\""))
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\"".utf8
            case "\\": out += "\\\\".utf8
            case "\n": out += "\\n".utf8
            case "\r": out += "\\r".utf8
            case "\t": out += "\\t".utf8
            case let c where PrintableText.isControl(c):
                let hex = String(c.value, radix: 16)
                out += ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8
            default: out += String(scalar).utf8
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
