import Foundation
import SettleLedger

/// One daemon per ledger: an exclusive `flock` on the ledger file itself.
///
/// A lock file beside the ledger could be deleted while the daemon runs, and the next
/// `settle run` would lock a fresh file and start next to it; the ledger file cannot be
/// deleted from under an open descriptor. The lock dies with the process, so a crashed daemon
/// never leaves a stale lock behind.
///
/// flock does not disturb SQLite's own locks, which are POSIX fcntl locks. flock(2), NOTES:
/// "Since Linux 2.0, flock() is implemented as a system call in its own right rather than
/// being emulated in the GNU C library as a call to fcntl(2). With this implementation, there
/// is no interaction between the types of lock placed by flock() and fcntl(2)". (Over NFS
/// flock is emulated with fcntl and would collide, but a WAL ledger cannot live on NFS anyway:
/// https://www.sqlite.org/wal.html, "WAL does not work over a network filesystem".)
///
/// One hazard remains, from fcntl(2): "If a process closes any file descriptor referring to a
/// file, then all of the process's locks on that file are released" — SQLite's included
/// (https://www.sqlite.org/howtocorrupt.html, section 2.2). So `release()` closes our
/// descriptor only once the ledger connection is closed; on an unclean stop the descriptor
/// is left for the process exit to close.
package final class DaemonLock {
    package let path: String
    private var fd: Int32

    package enum Failure: Error, Sendable, CustomStringConvertible {
        case held(path: String, holderPid: Int32?)
        case io(path: String, message: String)

        package var description: String {
            switch self {
            case let .held(path, pid):
                return "another settle run holds \(path)" + (pid.map { " (pid \($0))" } ?? "")
            case let .io(path, message):
                return "cannot open the ledger \(path) to lock it: \(message)"
            }
        }
    }

    /// Takes the lock on `ledgerPath` at once (creating an empty file, which SQLite takes as
    /// an empty database) or fails naming the holder, read from the ledger's daemon record.
    /// Call before opening the ledger: on failure our descriptor is closed again.
    package init(ledgerPath: String) throws(Failure) {
        path = ledgerPath
        fd = open(ledgerPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: ledgerPath, message: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            fd = -1
            throw .held(path: ledgerPath, holderPid: DaemonLock.holderPid(ledgerPath))
        }
    }

    /// Whether the file at `path` is still the one we locked: false once the ledger was moved
    /// away, deleted or replaced (a restore from backup) while we ran.
    package func isStillAtPath() -> Bool {
        var locked = stat(), current = stat()
        guard fd >= 0, fstat(fd, &locked) == 0, stat(path, &current) == 0 else { return false }
        return locked.st_dev == current.st_dev && locked.st_ino == current.st_ino
    }

    /// Only after the ledger connection is closed (see the type's comment).
    package func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    /// The pid the running daemon recorded when it started; nil while it has not yet.
    private static func holderPid(_ ledgerPath: String) -> Int32? {
        guard let ledger = try? SQLiteLedger(readOnlyPath: ledgerPath), let record = try? ledger.daemonRecord() else { return nil }
        try? ledger.close()
        return record.stoppedAt == nil ? record.owner.pid : nil
    }
}
