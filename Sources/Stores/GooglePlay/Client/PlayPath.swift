
/// URL pieces for Google's APIs: path segments and form values percent-encoded so that no id,
/// product id or token can change what a URL means (a `/`, `?`, `#` or `:` in one is data).
package enum PlayPath {
    /// RFC 3986 2.3 unreserved characters: the only bytes left as they are.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// One path segment or query value, every byte but the unreserved ones as `%XX`.
    package static func encode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }

    /// A value of an `application/x-www-form-urlencoded` body. Encoding everything but the
    /// unreserved characters is valid form encoding (a space as %20 rather than `+`).
    package static func formEncode(_ text: String) -> String { encode(text) }

    /// The inverse of `encode`, nil for a malformed escape: for the fake Google reading paths.
    package static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next(), let low = iterator.next(),
                  let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
