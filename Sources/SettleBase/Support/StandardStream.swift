#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// settle's stdout or stderr, written with write(2).
///
/// Whoever reads our output may go away (`settle demo | head -4`, `settle reconcile | true`,
/// journald restarting). FileHandle.write traps on EPIPE, after orders were already granted;
/// here any write error means "the reader is gone": that stream is dropped quietly and
/// settle carries on with its real work. SIGPIPE is ignored process-wide (`ignoreSIGPIPE`),
/// so EPIPE arrives as an error instead of killing us.
package final class StandardStream: Sendable {
    package static let output = StandardStream(descriptor: STDOUT_FILENO)
    package static let error = StandardStream(descriptor: STDERR_FILENO)

    private let descriptor: Int32
    private let readerGone = Atomic<Bool>(false)
    /// One writer at a time, so lines from worker threads never interleave.
    private let lock = Mutex(())

    package init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Whether a write has failed: nothing more is written to this stream.
    package var isGone: Bool { readerGone.load(ordering: .relaxed) }

    package func write(_ text: String) {
        guard !isGone else { return }
        var bytes = Array(text.utf8)
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else if written < 0 && errno == EAGAIN && waitWritable() {
                    // A descriptor shared with a non-blocking reader: wait for room.
                    continue
                } else {
                    readerGone.store(true, ordering: .relaxed)
                    return
                }
            }
        }
    }

    /// Up to ten seconds for a non-blocking descriptor to take more; a reader that slow is gone too.
    private func waitWritable() -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        return poll(&entry, 1, 10_000) == 1 && entry.revents & Int16(POLLOUT) != 0
    }

    /// Called first thing by `SettleCommand.run`: a closed pipe must be a write error, not a
    /// signal that kills settle in the middle of its work. Hooks get SIGPIPE back at its
    /// default (SubprocessSpawn resets every signal).
    package static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}
