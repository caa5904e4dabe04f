/// A configuration that cannot be used (exit 78). The message names the file and the key.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
