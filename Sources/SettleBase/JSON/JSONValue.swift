import Foundation

/// A JSON document as parsed, with object keys in their original order and numbers kept as
/// their literal text.
///
/// Apple's answers are loosely typed (ids arrive as strings or numbers, `download_id` can
/// exceed 2^53, booleans arrive as `"true"`), and the configuration must be validated with
/// the path of every offending key. Keeping the literal text of numbers means nothing is
/// rounded on the way in, and keeping key order means our own output (status, hook
/// payloads) is stable and readable.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    package static func number(_ value: Int) -> JSONValue { .number(String(value)) }
    package static func number(_ value: Int64) -> JSONValue { .number(String(value)) }
    package static func number(_ value: Double) -> JSONValue {
        value.rounded() == value && abs(value) < 1e15 ? .number(String(Int64(value))) : .number(String(value))
    }

    /// Optional helpers that map `nil` to JSON `null`.
    package static func string(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    package static func number(_ value: Int?) -> JSONValue { value.map { JSONValue.number($0) } ?? .null }

    package subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.last(where: { $0.0 == key })?.1
    }

    package var objectMembers: [(String, JSONValue)]? {
        if case let .object(members) = self { return members }
        return nil
    }

    package var arrayValue: [JSONValue]? {
        if case let .array(items) = self { return items }
        return nil
    }

    /// The value as text when it is a string, or a number's literal: Apple sends ids both ways.
    package var looseString: String? {
        switch self {
        case let .string(s): return s
        case let .number(n): return n
        default: return nil
        }
    }

    /// An integer sent as a JSON number or as a string of digits (`"1500884004000"`).
    package var looseInt64: Int64? {
        guard let text = looseString else { return nil }
        if let v = Int64(text) { return v }
        // Fractional milliseconds occur in Xcode-signed data; the integer part is what counts.
        if let d = Double(text), d.isFinite, abs(d) < 9.2e18 { return Int64(d) }
        return nil
    }

    /// A boolean sent as `true`, `1`, `"true"` or `"1"`.
    package var looseBool: Bool? {
        switch self {
        case let .bool(b): return b
        case let .number(n): return n == "1" ? true : (n == "0" ? false : nil)
        case let .string(s):
            switch s.lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        default: return nil
        }
    }

    /// Short name of the JSON type, used in error messages.
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}
