
/// A configuration that cannot be used (exit 78). The message names the file and the key.
package struct ConfigError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
