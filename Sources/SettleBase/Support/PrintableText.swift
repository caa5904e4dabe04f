/// Text from outside (order, user and product ids, hook output, Apple's messages) made safe
/// for a terminal or a log line: every control character is shown, never obeyed.
///
/// A raw ESC would let an order id recolour or rewrite an operator's terminal, and a raw CR
/// would let hook output overwrite the start of a log line with a forged one. JSON output
/// needs none of this: its serializer already escapes control characters.
package enum PrintableText {
    /// `\n`, `\r` and `\t` as those two characters; any other C0 control, DEL or C1 control
    /// as `\u{1B}`. With `keepingLineBreaks`, `\n` is left as is: for whole screens of
    /// output whose lines were made by settle itself. Backslashes are left alone so that
    /// ordinary text (paths on other systems, regexes in messages) reads unchanged.
    package static func escape(_ text: String, keepingLineBreaks: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && !(keepingLineBreaks && $0 == "\n") }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n" where keepingLineBreaks: out.append(scalar)
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": out.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": out.append(contentsOf: #"\t"#.unicodeScalars)
            case _ where isControl(scalar):
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 2))}".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// C0 (U+0000...U+001F), DEL (U+007F) and C1 (U+0080...U+009F).
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
