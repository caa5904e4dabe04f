import Glibc

/// How a foreground server (`settle simulator`, `settle web`) is stopped: it catches SIGINT and
/// SIGTERM from `install()` on, which it calls before it says it is listening (a signal sent by
/// whoever read that line is never lost), and `wait()` returns once one arrived; it then tears
/// down in order. The handler only posts a semaphore (async-signal-safe).
enum StopSignal {
    nonisolated(unsafe) private static let caught: UnsafeMutablePointer<sem_t> = {
        let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
        return semaphore
    }()

    /// Catches SIGINT and SIGTERM from now on (before this, their default action stops the process).
    static func install() {
        _ = caught
        for signalNumber in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in sem_post(StopSignal.caught) }
            sigemptyset(&action.sa_mask)
            sigaction(signalNumber, &action, nil)
        }
    }

    /// Returns once SIGINT or SIGTERM arrived after `install()`.
    static func wait() {
        while sem_wait(caught) != 0 && errno == EINTR {}
    }
}
