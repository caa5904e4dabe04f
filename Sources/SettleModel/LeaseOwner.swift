import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The identity of a process that claims orders: host, pid, the process's start time, and
/// the boot and PID namespace the pid means something in.
///
/// The start time makes the identity unique per boot and per process even when a pid is
/// reused, so a restarted daemon never mistakes a dead predecessor's claims for its own.
/// The boot id and PID-namespace inode matter because a pid is only a name inside one PID
/// namespace of one boot: a settle in a container that shares our host name (or in a
/// container of a previous boot, on a ledger on persistent storage) has pids we cannot see.
package struct LeaseOwner: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var pid: Int32
    package var startTime: String
    /// /proc/sys/kernel/random/boot_id; nil for an owner recorded by an older settle.
    package var bootId: String?
    /// The inode of /proc/self/ns/pid; nil for an owner recorded by an older settle.
    package var pidNamespace: UInt64?

    package init(host: String, pid: Int32, startTime: String, bootId: String? = nil, pidNamespace: UInt64? = nil) {
        self.host = host
        self.pid = pid
        self.startTime = startTime
        self.bootId = bootId
        self.pidNamespace = pidNamespace
    }

    /// An owner as the ledger stores it: `lease_start` (and the daemon's `process_start`) hold
    /// `"<starttime>;boot=<id>;pidns=<inode>"`, so the extra identity needs no new column.
    package init(host: String, pid: Int32, leaseStart: String) {
        // Every order read from the ledger decodes its owner: text settle wrote (ASCII) is read as
        // bytes, which splits and compares exactly as Characters do there and costs a fraction.
        if let owner = LeaseOwner(host: host, pid: pid, asciiLeaseStart: leaseStart) {
            self = owner
            return
        }
        var parts = leaseStart.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        let startTime = parts.isEmpty ? "" : parts.removeFirst()
        var bootId: String?, pidNamespace: UInt64?
        // Lenient: unknown or malformed parts are ignored, and a missing part leaves that
        // identity unknown, which only ever makes the owner harder to declare dead.
        for part in parts {
            if part.hasPrefix("boot=") { bootId = String(part.dropFirst(5)) }
            if part.hasPrefix("pidns=") { pidNamespace = UInt64(part.dropFirst(6)) }
        }
        self.init(host: host, pid: pid, startTime: startTime, bootId: bootId, pidNamespace: pidNamespace)
    }

    /// `init(host:pid:leaseStart:)` for ASCII text, read byte by byte (nil for any other text):
    /// in ASCII every byte is one Character, so the parts, prefixes and numbers are the same.
    private init?(host: String, pid: Int32, asciiLeaseStart leaseStart: String) {
        let semicolon = UInt8(ascii: ";")
        let parsed: (String, String?, UInt64?)?? = leaseStart.utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            let parts = bytes.split(separator: semicolon, omittingEmptySubsequences: false)
            let text = { (part: Slice<UnsafeBufferPointer<UInt8>>) in String(decoding: part, as: UTF8.self) }
            var bootId: String?, pidNamespace: UInt64?
            for part in parts.dropFirst() {
                if part.starts(with: "boot=".utf8) { bootId = text(part.dropFirst(5)) }
                if part.starts(with: "pidns=".utf8) { pidNamespace = UInt64(text(part.dropFirst(6))) }
            }
            return (parts.first.map(text) ?? "", bootId, pidNamespace)
        }
        guard let parsed = parsed ?? nil else { return nil }
        self.init(host: host, pid: pid, startTime: parsed.0, bootId: parsed.1, pidNamespace: parsed.2)
    }

    /// What the ledger stores in `lease_start` and `process_start` (see `init(host:pid:leaseStart:)`).
    package var leaseStart: String {
        // Appended, not interpolated: every claim check of every order binds it.
        var text = startTime
        if let bootId {
            text += ";boot="
            text += bootId
        }
        if let pidNamespace {
            text += ";pidns="
            text += String(pidNamespace)
        }
        return text
    }

    /// This process.
    package static let current: LeaseOwner = {
        let pid = getpid()
        return LeaseOwner(host: hostName(), pid: pid, startTime: processStartTime(pid) ?? "unknown",
                          bootId: currentBootId(), pidNamespace: currentPidNamespace())
    }()

    package var description: String { "\(host):\(pid)@\(startTime)" }

    /// Whether the owner is known to be gone: same host, boot and PID namespace as ours, and
    /// its pid is dead or now belongs to a process with another start time. Anywhere else its
    /// pid means nothing to us, and the lease expiry decides.
    ///
    /// An owner recorded without boot id or namespace (by an older settle) is never
    /// judged by its pid: it may have run in a container sharing our host name, and waiting
    /// out one lease after an upgrade costs minutes, while a wrong "dead" grants twice.
    package var isKnownDead: Bool { isKnownDead(comparedWith: .current) }

    package func isKnownDead(comparedWith us: LeaseOwner) -> Bool {
        guard host == us.host, let bootId, bootId == us.bootId, let pidNamespace, pidNamespace == us.pidNamespace else {
            return false
        }
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        // The pid exists (EPERM means it belongs to another user). When its /proc entry can't be
        // read (ProtectProc=invisible hides other users' processes) nothing is known: the
        // lease expiry decides, rather than risking two processes on one order.
        guard let start = LeaseOwner.processStartTime(pid) else { return false }
        return start != startTime
    }

    package static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A random id the kernel picks at each boot (random(4)); nil where /proc is not mounted.
    package static func currentBootId() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty || id.contains(";") ? nil : id
    }

    /// The inode of our PID namespace: equal inodes (on one boot) mean one namespace (namespaces(7)).
    package static func currentPidNamespace() -> UInt64? {
        var info = stat()
        guard stat("/proc/self/ns/pid", &info) == 0 else { return nil }
        return UInt64(info.st_ino)
    }

    /// Field 22 of /proc/PID/stat: the start time in clock ticks since boot (proc(5)).
    package static func processStartTime(_ pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the ')' the first field is field 3 (state), so field 22 is at offset 19.
        guard fields.count > 19 else { return nil }
        return String(fields[19])
    }
}
