import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A secret kept in its own file (never in the JSON), read only when needed.
///
/// Its contents are held in `Secret`, whose description is redacted, so an accidental
/// interpolation into a log line or error prints nothing secret.
package struct SecretFile: Sendable, Equatable {
    /// The configuration key that named it, for error messages.
    package var key: String
    package var path: String
    /// Where a relative name was looked for, in order, when none of them exists: the error
    /// then names them all, the installed layout's `credentials/` first.
    package var searched: [String] = []

    package init(key: String, path: String, searched: [String] = []) {
        self.key = key
        self.path = path
        self.searched = searched
    }

    /// The candidates `resolve` tries for a relative name, in order.
    package static func candidates(_ name: String, relativeTo folder: String, environment: [String: String]) -> [String] {
        if name.hasPrefix("/") { return [name] }
        var paths: [String] = []
        if let credentials = environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty {
            paths.append((credentials as NSString).appendingPathComponent(name))
        }
        paths.append((folder as NSString).appendingPathComponent("credentials/" + name))
        paths.append((folder as NSString).appendingPathComponent(name))
        return paths
    }

    /// A relative name is looked up first in `$CREDENTIALS_DIRECTORY` (systemd
    /// `LoadCredential=`), then next to the configuration file.
    package static func resolve(_ name: String, relativeTo folder: String, environment: [String: String]) -> String {
        if name.hasPrefix("/") { return name }
        if let credentials = environment["CREDENTIALS_DIRECTORY"], !credentials.isEmpty {
            let candidate = (credentials as NSString).appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        // Outside the unit (an operator's `settle check-config`), the file systemd would pass:
        // the installed layout keeps credentials in `credentials/` next to the configuration.
        let installed = (folder as NSString).appendingPathComponent("credentials/" + name)
        if FileManager.default.fileExists(atPath: installed) { return installed }
        return (folder as NSString).appendingPathComponent(name)
    }

    /// Reads the secret, refusing a file that group or others may read.
    package func read() throws(ConfigError) -> Secret {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            if errno == ENOENT && searched.count > 1 {
                throw ConfigError("\(key): no secret file: looked for \(searched.joined(separator: ", ")); "
                    + "put the secret in \(searched[searched.count - 2]) (chmod 600)")
            }
            throw ConfigError("\(key): cannot read secret file \(path): \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ConfigError("\(key): \(path) is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw ConfigError(String(format: "%@: secret file %@ is readable by group or others (mode %03o); chmod 600 it",
                                     key, path, Int(info.st_mode & 0o777)))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("\(key): cannot read secret file \(path)")
        }
        let value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty else { throw ConfigError("\(key): secret file \(path) is empty") }
        return Secret(value)
    }
}

/// A secret value. Printing it prints `<redacted>`.
package struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    package let value: String
    package init(_ value: String) { self.value = value }
    package var description: String { "<redacted>" }
    package var debugDescription: String { "<redacted>" }
}
