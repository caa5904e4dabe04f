import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The identity of a process that claims orders: host, pid and the process's start time.
///
/// The start time makes the identity unique per boot and per process even when a pid is
/// reused, so a restarted daemon never mistakes a dead predecessor's claims for its own.
public struct LeaseOwner: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var pid: Int32
    public var startTime: String

    public init(host: String, pid: Int32, startTime: String) {
        self.host = host
        self.pid = pid
        self.startTime = startTime
    }

    /// This process.
    public static let current: LeaseOwner = {
        let pid = getpid()
        return LeaseOwner(host: hostName(), pid: pid, startTime: processStartTime(pid) ?? "unknown")
    }()

    public var description: String { "\(host):\(pid)@\(startTime)" }

    /// Whether the owner is known to be gone: same host, and its pid is dead or now belongs
    /// to a process with another start time. On another host nothing can be known, and the
    /// lease expiry decides.
    public var isKnownDead: Bool {
        guard host == LeaseOwner.hostName() else { return false }
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        // The pid exists (EPERM means it belongs to another user). When its /proc entry can't be
        // read (ProtectProc=invisible hides other users' processes) nothing is known: the
        // lease expiry decides, rather than risking two processes on one order.
        guard let start = LeaseOwner.processStartTime(pid) else { return false }
        return start != startTime
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Field 22 of /proc/PID/stat: the start time in clock ticks since boot (proc(5)).
    static func processStartTime(_ pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the ')' the first field is field 3 (state), so field 22 is at offset 19.
        guard fields.count > 19 else { return nil }
        return String(fields[19])
    }
}
