/// Where the daemon is in its life, as one value: what exists only while it runs (the
/// configuration, the ledger, the reconciler, the file lock) lives inside the cases that have
/// it, so "stopped but still holding a ledger" or "running without a reconciler" cannot be
/// written. Generic over what `Running` carries so the transitions are tested without I/O.
///
/// It only moves forward: starting -> running -> stopping -> stopped. The daemon keeps it in
/// one `Mutex`, because the pass, the signal handlers, the grace timer and the endpoint's
/// threads read it from different queues.
package enum DaemonState<Running> {
    case starting
    case running(Running)
    case stopping(Running)
    case stopped

    /// What the daemon holds while it runs or finishes a pass; nil before and after.
    package var running: Running? {
        switch self {
        case .running(let running), .stopping(let running): return running
        case .starting, .stopped: return nil
        }
    }

    /// True once a stop has begun: a pass stops claiming, no new pass or catch-up starts.
    package var isStopping: Bool {
        switch self {
        case .starting, .running: return false
        case .stopping, .stopped: return true
        }
    }

    /// starting -> running: the configuration loaded, the ledger and the reconciler opened.
    /// Happens once; false (and nothing changes) in any other state.
    package mutating func started(_ running: Running) -> Bool {
        guard case .starting = self else { return false }
        self = .running(running)
        return true
    }

    /// running -> running: a reload replaces the configuration and the reconciler in place
    /// (the ledger and the lock stay). Only while running: once a stop has begun the pass is
    /// finishing with what it holds, so a late reload changes nothing; false then.
    package mutating func reload(_ change: (inout Running) -> Void) -> Bool {
        guard case .running(var running) = self else { return false }
        change(&running)
        self = .running(running)
        return true
    }

    /// running -> stopping: SIGTERM, SIGINT or a replaced ledger file. Returns what is held (to
    /// read the grace period from); nil when a stop had already begun or the daemon never ran.
    package mutating func beginStopping() -> Running? {
        guard case .running(let running) = self else { return nil }
        self = .stopping(running)
        return running
    }

    /// stopping -> stopped: the pass let go (clean) or the grace period ran out. Returns what
    /// was held, for the caller to close, exactly once; nil if it had already stopped (the
    /// clean end and the grace timer race) or no stop had begun.
    package mutating func finish() -> Running? {
        guard case .stopping(let running) = self else { return nil }
        self = .stopped
        return running
    }
}

extension DaemonState: Sendable where Running: Sendable {}
