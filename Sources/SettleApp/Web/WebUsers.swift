import Foundation
import SettleBase
import Synchronization
import SettleConfig
import SettleModel

/// The people who may use the console (`web.users_file`: lines `name:hash` or `name:hash:role`,
/// `#` comments and blank lines allowed), and the check of an HTTP basic auth header against them.
/// A line without a role keeps the power every user had before roles: `admin`.
final class WebUsers: Sendable {
    private let hashes: [String: WebPasswordHash]
    private let roles: [String: OperatorRole]
    /// Credentials checked once are remembered by their keyed digest, so that a browser sending
    /// the same header with every request does not pay PBKDF2's cost each time. The key is this
    /// process's own; nothing of the password is kept.
    private let verified = Mutex<[String: String]>([:])
    private let cacheKey = Data(SecureRandom.bytes(32))

    var names: [String] { hashes.keys.sorted() }

    /// Whether `name` is a user's (a failed sign-in's name is audited only then).
    func knows(_ name: String) -> Bool { hashes[name] != nil }

    /// A user's role: the line's third field, else admin (a two-field line keeps today's power).
    func role(of name: String) -> OperatorRole { roles[name] ?? .admin }

    init(hashes: [String: WebPasswordHash], roles: [String: OperatorRole] = [:],
         concurrentChecks: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.hashes = hashes
        self.roles = roles
        checks = DispatchSemaphore(value: max(1, concurrentChecks))
    }

    /// Parses the file's text; `source` names it in errors (a line number, never a line's text).
    static func parse(_ text: String, source: String) throws(ConfigError) -> WebUsers {
        var hashes: [String: WebPasswordHash] = [:]
        var roles: [String: OperatorRole] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            // name:hash or name:hash:role (a hash holds no colon).
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 2, WebUsers.isName(fields[0]), let hash = WebPasswordHash(fields[1]) else {
                throw ConfigError("\(source): line \(index + 1) is not name:hash or name:hash:role "
                                  + "as settle web-passwd NAME prints it")
            }
            let name = fields[0]
            guard hashes[name] == nil else { throw ConfigError("\(source): line \(index + 1) names \(name) a second time") }
            if fields.count == 3 {
                guard let role = OperatorRole(rawValue: fields[2]) else {
                    throw ConfigError("\(source): line \(index + 1): a role is viewer, support or admin")
                }
                roles[name] = role
            }
            hashes[name] = hash
        }
        guard !hashes.isEmpty else { throw ConfigError("\(source): no users (add lines from settle web-passwd NAME)") }
        return WebUsers(hashes: hashes, roles: roles)
    }

    /// Reads `web.users_file` (refused when group or others may read it, as every secret file).
    static func load(_ file: SecretFile) throws(ConfigError) -> WebUsers {
        try parse(try file.read().value, source: file.key)
    }

    /// A user name: letters, digits and `._@-`, 1 to 64 characters (it is shown in history).
    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || [0x2E, 0x5F, 0x40, 0x2D].contains(c)
        }
    }

    enum Check: Equatable {
        case user(String)
        /// No credentials sent: the browser's first request, not a failed login.
        case missing
        /// Wrong name or password; the name sent, to log (never the password).
        case refused(String)
        /// Every password check slot is busy (a flood of logins): try again in a moment.
        case busy
    }

    /// Password checks running at once: at most one per core, so a flood of logins (each
    /// ≈ 0.13 s of PBKDF2) cannot take every thread from signed-in users, whose headers are
    /// answered from the cache without a check.
    let checks: DispatchSemaphore

    /// The name an `Authorization: Basic ...` header sends, before any check (for the throttle).
    static func name(in authorization: String?) -> String? {
        guard let header = authorization, header.count > 6, header.prefix(6).lowercased() == "basic ",
              let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":") else { return nil }
        return String(pair[..<colon].prefix(64))
    }

    /// Whether the header was checked and found right before (no PBKDF2, no throttle).
    func isKnown(authorization: String?) -> Bool {
        guard let header = authorization else { return false }
        let key = HMACSHA256.hex(key: cacheKey, message: Data(header.utf8))
        return verified.withLock { $0[key] } != nil
    }

    /// Checks an `Authorization: Basic ...` header.
    func check(authorization: String?) -> Check {
        guard let header = authorization, header.count > 6, header.prefix(6).lowercased() == "basic " else { return .missing }
        let key = HMACSHA256.hex(key: cacheKey, message: Data(header.utf8))
        if let name = verified.withLock({ $0[key] }) { return .user(name) }
        guard let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":") else { return .refused("") }
        guard checks.wait(timeout: .now()) == .success else { return .busy }
        defer { checks.signal() }
        let name = String(pair[..<colon]), password = String(pair[pair.index(after: colon)...])
        // An unknown name costs the same as a wrong password: the time tells nothing of who exists.
        let hash = hashes[name] ?? Self.decoy
        guard hash.verifies(password), hashes[name] != nil else { return .refused(String(name.prefix(64))) }
        verified.withLock { cache in
            if cache.count >= 256 { cache.removeAll() }
            cache[key] = name
        }
        return .user(name)
    }

    private static let decoy = WebPasswordHash.make(UUID().uuidString)
}
