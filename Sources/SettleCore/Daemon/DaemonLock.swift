import Foundation

/// One daemon per ledger: an exclusive `flock` on a lock file beside the ledger.
///
/// Never on the database file itself: POSIX advisory locks on a file are dropped when any
/// descriptor of the process for that file is closed, and SQLite opens and closes its own
/// (https://www.sqlite.org/howtocorrupt.html, section 2.2). The lock dies with the process,
/// so a crashed daemon never leaves a stale lock behind.
public final class DaemonLock {
    public let path: String
    private var fd: Int32

    /// The lock file for a ledger.
    public static func path(forLedger ledger: String) -> String { ledger + ".lock" }

    public enum Failure: Error, Sendable, CustomStringConvertible {
        case held(path: String, holderPid: Int32?)
        case io(path: String, message: String)

        public var description: String {
            switch self {
            case let .held(path, pid):
                return "another settle run holds \(path)" + (pid.map { " (pid \($0))" } ?? "")
            case let .io(path, message):
                return "cannot open lock file \(path): \(message)"
            }
        }
    }

    /// Takes the lock at once or fails naming the holder; writes our pid into the file.
    public init(path: String) throws(Failure) {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: path, message: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = DaemonLock.readPid(fd)
            close(fd)
            throw .held(path: path, holderPid: holder)
        }
        let text = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.utf8.count, 0)
    }

    deinit { release() }

    public func release() {
        guard fd >= 0 else { return }
        _ = ftruncate(fd, 0)
        close(fd)
        fd = -1
    }

    private static func readPid(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
