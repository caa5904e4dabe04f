import Foundation

/// Base64url without padding (RFC 4648 section 5, as RFC 7515 uses it for JWS).
///
/// Decoding is strict: only the 64 URL-safe characters, no `=`, no whitespace, and the
/// unused low bits of the last character must be zero. A strict decoder gives every byte
/// string exactly one accepted text form, so a token cannot be altered without its bytes
/// changing too.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Value of each ASCII byte in the alphabet, or 0xFF for bytes outside it.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    package static func encode(_ data: Data) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((data.count * 4 + 2) / 3)
        let bytes = [UInt8](data)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [sextet(chunk, 18), sextet(chunk, 12), sextet(chunk, 6), sextet(chunk, 0)]
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out += [sextet(chunk, 18), sextet(chunk, 12)]
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [sextet(chunk, 18), sextet(chunk, 12), sextet(chunk, 6)]
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The decoded bytes, or `nil` if `text` is not canonical unpadded base64url.
    package static func decode(_ text: some StringProtocol) -> Data? {
        let input = Array(text.utf8)
        // A lone trailing character carries only 6 bits, less than a byte: never valid.
        guard input.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits are padding an encoder sets to zero; anything else is a second
        // spelling of the same bytes.
        guard accumulator == 0 else { return nil }
        return Data(out)
    }

    private static func sextet(_ chunk: UInt32, _ shift: UInt32) -> UInt8 {
        alphabet[Int((chunk >> shift) & 0x3F)]
    }
}
