import SettleBase

/// HTML built so that outside text cannot become markup: a `Markup` literal is the source
/// code's own (trusted), and every `String` interpolated into one goes through `HTML.escape`.
/// Only another `Markup` is inserted as it is. An order id, a user id or a hook's output holding
/// `<script>` is shown as text, on every page, because there is no other way to put text in.
struct Markup: Sendable, Equatable, ExpressibleByStringInterpolation {
    private(set) var html: String

    init(stringLiteral value: String) { html = value }

    init(stringInterpolation: StringInterpolation) { html = stringInterpolation.html }

    private init(trusted html: String) { self.html = html }

    static let empty = Markup(stringLiteral: "")

    /// Markup side by side, with `separator` between.
    static func join(_ parts: [Markup], separator: Markup = .empty) -> Markup {
        Markup(trusted: parts.map(\.html).joined(separator: separator.html))
    }

    static func + (lhs: Markup, rhs: Markup) -> Markup { Markup(trusted: lhs.html + rhs.html) }

    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var html = ""

        init(literalCapacity: Int, interpolationCount: Int) { html.reserveCapacity(literalCapacity + 16 * interpolationCount) }

        mutating func appendLiteral(_ literal: String) { html += literal }
        /// Outside text: escaped.
        mutating func appendInterpolation(_ text: String) { html += HTML.escape(text) }
        mutating func appendInterpolation(_ text: Substring) { html += HTML.escape(String(text)) }
        mutating func appendInterpolation(_ number: Int) { html += String(number) }
        mutating func appendInterpolation(_ number: Int64) { html += String(number) }
        mutating func appendInterpolation(_ markup: Markup) { html += markup.html }
        mutating func appendInterpolation(_ parts: [Markup]) { html += parts.map(\.html).joined() }
    }
}

/// The one escaping function every value on a page goes through (through `Markup`).
enum HTML {
    /// Text for an element's content or a quoted attribute: `& < > " '` become references, and
    /// control characters (a hook's terminal codes) are shown as `\u{…}` rather than passed on.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            default:
                // Format characters too (a right-to-left override would reorder what is shown).
                if PrintableText.isControl(scalar) || scalar.properties.generalCategory == .format {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// A path segment for a link: everything but unreserved characters percent-encoded, so an
    /// order id with `/`, `?` or `#` in it still names that order.
    static func pathSegment(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(Character(UnicodeScalar(byte)))
            default:
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
