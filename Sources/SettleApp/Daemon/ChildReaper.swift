#if canImport(Glibc)
import Glibc
#endif

/// Makes settle the reaper of its hooks' orphans, and reaps them.
///
/// A hook may leave a background process behind. When the hook exits, that process is
/// re-parented to the nearest subreaper or to PID 1; in a container settle often *is* PID 1,
/// and nobody would ever wait for it: each one stays a zombie, and pids run out. So settle
/// declares itself a subreaper and, between passes, reaps whatever has exited.
///
/// Only the commands (`settle run`, `settle reconcile`) do this, never the library's
/// reconciler: `waitpid(-1)` would steal the exit status of any other child of a process
/// that embeds SettleApp (XCTest runs its own).
enum ChildReaper {
    /// prctl(2): "PR_SET_CHILD_SUBREAPER (since Linux 3.4) If arg2 is nonzero, set the
    /// 'child subreaper' attribute of the calling process". Returns false where refused.
    @discardableResult
    static func becomeSubreaper() -> Bool {
        guard let prctl = prctlFunction else { return false }
        return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    }

    /// Reaps every child that has exited. Call only when no hook runs: a hook's own exit
    /// status belongs to the code that started it. Returns the pids reaped.
    @discardableResult
    static func reapExited() -> [pid_t] {
        var reaped: [pid_t] = []
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid > 0 {
                reaped.append(pid)
            } else if pid < 0 && errno == EINTR {
                continue
            } else {
                return reaped
            }
        }
    }

    /// prctl is variadic in C, which Swift cannot call; with integer arguments only, calling it
    /// through a five-argument pointer is what C callers' code does too (each goes in a register).
    private typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
    private static let prctlFunction: Prctl? = dlsym(nil, "prctl").map { unsafeBitCast($0, to: Prctl.self) }
    /// From <linux/prctl.h>, which Glibc does not import.
    private static let PR_SET_CHILD_SUBREAPER: Int32 = 36
}
