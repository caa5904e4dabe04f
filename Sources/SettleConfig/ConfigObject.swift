import SettleBase

/// Reads one JSON object of the configuration, remembering its path for error messages and
/// which keys were read, so that anything left over is reported as an unknown key.
package struct ConfigObject {
    package let path: String
    private let members: [(String, JSONValue)]
    private var read: Set<String> = []

    package init(_ value: JSONValue, path: String) throws(ConfigError) {
        guard let members = value.objectMembers else {
            throw ConfigError("\(path.isEmpty ? "the configuration" : path): expected an object, got \(value.typeName)")
        }
        self.members = members
        self.path = path
        var seen = Set<String>()
        for (key, _) in members where !seen.insert(key).inserted {
            throw ConfigError("\(name(key)): key appears twice")
        }
    }

    /// A key's path as a reader would type it: `schedule.interval_seconds`, and a key that is
    /// not a plain word (a product id with dots) quoted: `products["com.example.coins"].type`.
    package func name(_ key: String) -> String {
        let plain = !key.isEmpty && key.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
        if !plain {
            return path + "[\"" + PrintableText.escape(key).replacingOccurrences(of: "\"", with: "\\\"") + "\"]"
        }
        return path.isEmpty ? key : "\(path).\(key)"
    }

    package mutating func value(_ key: String) -> JSONValue? {
        read.insert(key)
        guard let value = members.first(where: { $0.0 == key })?.1 else { return nil }
        return value
    }

    /// Whether the object names `key` (without marking it read).
    package func has(_ key: String) -> Bool { members.contains { $0.0 == key } }

    package mutating func require(_ key: String) throws(ConfigError) -> JSONValue {
        guard let value = value(key) else { throw ConfigError("\(name(key)): required key is missing") }
        return value
    }

    package mutating func string(_ key: String) throws(ConfigError) -> String? {
        guard let value = value(key) else { return nil }
        guard case let .string(s) = value, !s.isEmpty else {
            throw ConfigError("\(name(key)): expected a non-empty string, got \(value.typeName)")
        }
        return s
    }

    /// A list of non-empty strings (`web.hosts`); nil when the key is absent.
    package mutating func stringArray(_ key: String) throws(ConfigError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard let items = value.arrayValue else { throw ConfigError("\(name(key)): expected a list of strings, got \(value.typeName)") }
        return try items.map { (item: JSONValue) throws(ConfigError) -> String in
            guard case let .string(s) = item, !s.isEmpty else {
                throw ConfigError("\(name(key)): expected a list of non-empty strings, found \(item.typeName)")
            }
            return s
        }
    }

    package mutating func requireString(_ key: String) throws(ConfigError) -> String {
        guard let s = try string(key) else { throw ConfigError("\(name(key)): required key is missing") }
        return s
    }

    package mutating func bool(_ key: String, default fallback: Bool) throws(ConfigError) -> Bool {
        guard let value = value(key) else { return fallback }
        guard case let .bool(b) = value else { throw ConfigError("\(name(key)): expected true or false, got \(value.typeName)") }
        return b
    }

    package mutating func number(_ key: String, default fallback: Double, range: ClosedRange<Double>) throws(ConfigError) -> Double {
        guard let value = value(key) else { return fallback }
        guard case let .number(text) = value, let n = Double(text) else {
            throw ConfigError("\(name(key)): expected a number, got \(value.typeName)")
        }
        guard range.contains(n) else {
            throw ConfigError("\(name(key)): \(text) is out of range (\(format(range.lowerBound))...\(format(range.upperBound)))")
        }
        return n
    }

    package mutating func integer(_ key: String, default fallback: Int, range: ClosedRange<Int>) throws(ConfigError) -> Int {
        guard let value = value(key) else { return fallback }
        guard case let .number(text) = value, let n = Int(text) else {
            throw ConfigError("\(name(key)): expected an integer, got \(value.typeName == "number" ? "a fraction" : value.typeName)")
        }
        guard range.contains(n) else { throw ConfigError("\(name(key)): \(n) is out of range (\(range.lowerBound)...\(range.upperBound))") }
        return n
    }

    package mutating func object(_ key: String) throws(ConfigError) -> ConfigObject? {
        guard let value = value(key) else { return nil }
        return try ConfigObject(value, path: name(key))
    }

    /// Every key of this object, for maps such as `products`.
    package mutating func allKeys() -> [String] {
        let keys = members.map(\.0)
        read.formUnion(keys)
        return keys
    }

    /// Call after reading: any key not read is unknown, and an unknown key is an error.
    package func rejectUnknownKeys() throws(ConfigError) {
        if let unknown = unknownKeys() { throw ConfigError(unknown) }
    }

    /// For a section whose keys are all known up front: `body` decodes it, and a wrong value
    /// never hides a mistyped key (`schedule.intervall`) — both are reported, unknown keys first.
    package func decode<T>(knownKeys: Set<String>,
                           _ body: (inout ConfigObject) throws(ConfigError) -> T) throws(ConfigError) -> T {
        var object = self
        let unknown = members.filter { !knownKeys.contains($0.0) }.map { "\(name($0.0)): unknown key" }
        let value: T
        do throws(ConfigError) {
            value = try body(&object)
        } catch {
            // The body's own unknown-key check names the same keys: each is said once.
            let more = error.message.split(separator: "\n").map(String.init).filter { !unknown.contains($0) }
            throw ConfigError((unknown + more).joined(separator: "\n"))
        }
        if !unknown.isEmpty { throw ConfigError(unknown.joined(separator: "\n")) }
        return value
    }

    /// One line per key not read, or nil when every key was read.
    package func unknownKeys() -> String? {
        let unknown = members.filter { !read.contains($0.0) }.map { "\(name($0.0)): unknown key" }
        return unknown.isEmpty ? nil : unknown.joined(separator: "\n")
    }

    private func format(_ d: Double) -> String { d.rounded() == d ? String(Int(d)) : String(d) }
}
