#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

/// How one run of an external program ended, with what it printed.
package struct SubprocessResult: Sendable, Equatable {
    /// Why the program is no longer running.
    package enum Termination: Sendable, Equatable {
        /// Normal exit with this code.
        case exited(Int32)
        /// Killed by this signal (not by us).
        case signaled(Int32)
        /// We killed its process group at the deadline.
        case timedOut
    }

    package var termination: Termination
    /// Standard output and standard error interleaved as written, at most `outputLimit`
    /// bytes of UTF-8. Invalid UTF-8 is repaired with U+FFFD.
    package var output: String
    package var outputTruncated: Bool
    /// Seconds from spawn until `run` returned, on the monotonic clock.
    package var duration: Double
    package var pid: Int32

    package init(termination: Termination, output: String, outputTruncated: Bool, duration: Double, pid: Int32) {
        (self.termination, self.output, self.outputTruncated, self.duration) = (termination, output, outputTruncated, duration)
        self.pid = pid
    }
}

/// The program could not be started at all (nothing ran, so nothing can have been delivered).
package struct SubprocessError: Error, Sendable, CustomStringConvertible {
    /// For example "cannot run /no/such/hook: No such file or directory". Never contains
    /// environment values or standard input, which may carry secrets.
    package var message: String
    /// The program itself cannot run (missing, not executable, a directory, not a program):
    /// a fault of the configuration, not of this moment, so retrying changes nothing.
    package var programUnusable: Bool
    package var description: String { message }

    package init(message: String, programUnusable: Bool = false) {
        self.message = message
        self.programUnusable = programUnusable
    }
}

/// Runs external programs (the operator's delivery hook) with full control over the
/// process group, file descriptors, signals and time.
///
/// Foundation's `Process` cannot put the child in its own process group, so a hook's
/// grandchildren would survive a timeout; this is built on `posix_spawn` instead.
package enum Subprocess {
    /// How long output is still collected after the program exited while something it
    /// started keeps the pipe open. Bounded so a stray background job cannot stall delivery.
    package static let drainGraceAfterExit: Double = 0.5

    /// How often exit is checked when the kernel offers no pidfd to wait on.
    package static let exitPollInterval: Double = 0.01

    /// Runs `arguments[0]` (an absolute or relative path, no PATH search, no shell) with exactly `environment`,
    /// writes `standardInput` to its stdin then closes it, and waits for it.
    ///
    /// - Parameters:
    ///   - timeout: seconds from spawn after which the program's whole process group is
    ///     killed with SIGKILL; `.infinity` waits forever, zero or NaN kills at once.
    ///   - outputLimit: bytes of combined output to keep; the rest is read and discarded
    ///     so a chatty program never blocks on a full pipe.
    ///   - onStart: called on the calling thread with the child's pid right after spawn.
    /// - Throws: `SubprocessError` only when nothing could be started.
    package static func run(arguments: [String], environment: [String: String], standardInput: Data,
                           timeout: Double, outputLimit: Int = 4096,
                           onStart: (@Sendable (Int32) -> Void)? = nil) throws(SubprocessError) -> SubprocessResult {
        guard let program = arguments.first else {
            throw SubprocessError(message: "cannot run an empty command")
        }
        _ = sigpipeIgnored

        let stdinPipe = try Pipe.make(program: program)
        let outputPipe = try Pipe.make(program: program)
        let pid = try spawn(program: program, arguments: arguments, environment: environment,
                            standardInput: stdinPipe.readEnd, output: outputPipe.writeEnd)
        let started = monotonicNow()

        // The child's end of its stdin goes at once (else it would never see end of file). The
        // write end of its output is `RunningChild`'s to close: at once where no pidfd tells of
        // the exit, else once the child has exited.
        stdinPipe.readEnd.close()

        onStart?(pid)

        let safeTimeout = timeout.isNaN ? 0 : max(0, timeout)
        var child = RunningChild(pid: pid, input: stdinPipe.writeEnd, standardInput: standardInput,
                                 output: outputPipe.readEnd, outputWriter: outputPipe.writeEnd, outputLimit: outputLimit,
                                 deadline: started + safeTimeout)
        let termination = child.superviseUntilFinished()
        let output = child.collector.textAndTruncation
        return SubprocessResult(termination: termination,
                                output: output.text,
                                outputTruncated: output.truncated,
                                duration: monotonicNow() - started,
                                pid: pid)
    }

    /// Writing to a pipe whose reader is gone raises SIGPIPE, which by default kills the
    /// whole daemon; pipes have no MSG_NOSIGNAL. So SIGPIPE is set to SIG_IGN process-wide,
    /// once, and writes see EPIPE instead. That is what a network daemon wants anyway; a
    /// handler someone else installed is left alone. Children get SIG_DFL back (SETSIGDEF).
    private static let sigpipeIgnored: Void = {
        var current = sigaction()
        if sigaction(SIGPIPE, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil {
            _ = signal(SIGPIPE, SIG_IGN)
        }
    }()

    package static func monotonicNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1_000_000_000
    }
}

/// One spawned child from spawn until it is reaped and its output drained.
///
/// Everything happens on the caller's thread in one `poll` loop (stdin writes, output
/// reads, exit notification, the deadline), so concurrent runs share no state and need
/// no locks or helper threads.
private struct RunningChild {
    let pid: pid_t
    /// Parent's end of the child's stdin; nil once everything is written or the child stopped reading.
    var input: Subprocess.FileDescriptor?
    let standardInput: Data
    var inputOffset = 0
    /// Parent's end of the combined stdout/stderr pipe; nil after EOF.
    var output: Subprocess.FileDescriptor?
    var collector: Subprocess.OutputCollector
    /// Becomes readable when the child exits; nil on kernels without pidfd (then we poll).
    var exitNotifier: Subprocess.FileDescriptor?
    /// Our copy of the output pipe's write end, held while the child runs when `exitNotifier`
    /// tells of its exit. A child closes its output as it exits, a moment before it has exited:
    /// with nobody else holding a write end, that end of file woke this thread and the pidfd woke
    /// it again (three sleeps a run with the spawn's, measured by `settle-bench --rows spawn`).
    /// Held, the output wakes it only for what the child writes; closed once the child has
    /// exited, so that the end of file (or the drain's grace, for a grandchild) comes as before.
    var outputWriter: Subprocess.FileDescriptor?
    let deadline: Double
    /// A pipe's worth; left uninitialized (read(2) fills what it returns): zeroing 64 KiB for
    /// every hook run was 4 % of a pass's instructions.
    private var readBuffer = [UInt8](unsafeUninitializedCapacity: 64 * 1024) { _, count in count = 64 * 1024 }

    init(pid: pid_t, input: Subprocess.FileDescriptor, standardInput: Data,
         output: Subprocess.FileDescriptor, outputWriter: Subprocess.FileDescriptor, outputLimit: Int, deadline: Double) {
        self.pid = pid
        self.input = standardInput.isEmpty ? nil : input
        self.standardInput = standardInput
        self.output = output
        self.collector = Subprocess.OutputCollector(limit: outputLimit)
        self.exitNotifier = Subprocess.openPidfd(pid)
        self.deadline = deadline
        if exitNotifier == nil {
            // Exit is found by polling every `exitPollInterval`: the end of file is what ends
            // the wait early, so nobody else may hold a write end.
            outputWriter.close()
        } else {
            self.outputWriter = outputWriter
        }
        if standardInput.isEmpty {
            input.close()
        }
        // Non-blocking on our ends only (each pipe end is its own open file description,
        // so the child's ends stay blocking): a child that neither reads stdin nor exits,
        // or floods output, must never stall this loop.
        self.input?.setNonBlocking()
        output.setNonBlocking()
    }

    mutating func superviseUntilFinished() -> SubprocessResult.Termination {
        var ended: SubprocessResult.Termination?
        var drainUntil = Double.infinity

        while true {
            let now = Subprocess.monotonicNow()
            if ended == nil, now >= deadline {
                // It may have exited on its own just now; then its real status counts.
                ended = reapIfExited()
                if ended == nil {
                    killProcessGroup()
                    _ = reapBlocking()
                    ended = .timedOut
                }
            }
            if ended != nil, drainUntil == .infinity {
                // Nobody is left to read stdin, and a still-running grandchild must not hold
                // us for more than a short grace: keep only what arrives before EOF or then.
                drainUntil = now + Subprocess.drainGraceAfterExit
                closeInput()
                exitNotifier?.close()
                exitNotifier = nil
                outputWriter?.close()
                outputWriter = nil
            }
            if let ended, output == nil || now >= drainUntil {
                closeOutput()
                return ended
            }

            let events = pollOnce(timeout: ended == nil ? pollTimeout(now: now) : drainUntil - now)
            if events.input { writeInput() }
            if events.output { readOutput() }
            if ended == nil, events.exited || exitNotifier == nil {
                ended = reapIfExited()
            }
        }
    }

    private func pollTimeout(now: Double) -> Double {
        let untilDeadline = deadline - now
        return exitNotifier == nil ? min(untilDeadline, Subprocess.exitPollInterval) : untilDeadline
    }

    private func pollOnce(timeout: Double) -> (input: Bool, output: Bool, exited: Bool) {
        // poll skips entries with a negative fd, so a closed descriptor simply sits out.
        var fds = [pollfd(fd: input?.rawValue ?? -1, events: Int16(POLLOUT), revents: 0),
                   pollfd(fd: output?.rawValue ?? -1, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: exitNotifier?.rawValue ?? -1, events: Int16(POLLIN), revents: 0)]
        // Cap each wait at a minute so `.infinity` needs no special case and the
        // millisecond count always fits an Int32.
        let milliseconds = Int32(max(0, min(60_000, (timeout * 1000).rounded(.up))))
        // EINTR (or any other poll failure) simply means "look again": the loop
        // re-checks the clock and the child on every turn.
        guard poll(&fds, nfds_t(fds.count), milliseconds) > 0 else { return (false, false, false) }
        return (fds[0].revents != 0, fds[1].revents != 0, fds[2].revents != 0)
    }

    private mutating func writeInput() {
        guard let fd = input?.rawValue else { return }
        while inputOffset < standardInput.count {
            let written = standardInput.withUnsafeBytes { bytes in
                write(fd, bytes.baseAddress! + inputOffset, bytes.count - inputOffset)
            }
            if written > 0 {
                inputOffset += written
                continue
            }
            let error = errno
            if written < 0 && error == EINTR { continue }
            if written < 0 && (error == EAGAIN || error == EWOULDBLOCK) { return }
            // EPIPE and friends: the child closed stdin or exited without reading it all.
            // Whether that is a failure is for its exit code to say, not for us.
            break
        }
        closeInput()
    }

    private mutating func closeInput() {
        input?.close()
        input = nil
    }

    private mutating func closeOutput() {
        output?.close()
        output = nil
    }

    /// One read per wake-up, so a child writing as fast as we read cannot keep us from
    /// noticing the deadline.
    private mutating func readOutput() {
        guard let fd = output?.rawValue else { return }
        while true {
            let count = readBuffer.withUnsafeMutableBytes { buffer in
                read(fd, buffer.baseAddress, buffer.count)
            }
            if count > 0 {
                readBuffer.withUnsafeBytes { buffer in
                    collector.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
                return
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            closeOutput()
            return
        }
    }

    /// Kills the whole group the child leads, so grandchildren die with it. The child
    /// is not reaped yet, so its pid (and with it the group id) cannot have been reused.
    /// It is also killed by pid in case it left its group (setsid); we owe a dead hook.
    private func killProcessGroup() {
        _ = kill(-pid, SIGKILL)
        _ = kill(pid, SIGKILL)
    }

    /// Only this pid, never -1: other code in the daemon may have children of its own.
    private func reapIfExited() -> SubprocessResult.Termination? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return Self.termination(fromWaitStatus: status) }
            if result == 0 { return nil }
            if errno == EINTR { continue }
            return Self.statusLost
        }
    }

    private func reapBlocking() -> SubprocessResult.Termination {
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, 0) == pid { return Self.termination(fromWaitStatus: status) }
            if errno == EINTR { continue }
            return Self.statusLost
        }
    }

    /// waitpid only fails for a pid that is our child when someone else reaped it
    /// (SIGCHLD set to SIG_IGN, or a waitpid(-1) elsewhere). The outcome is then unknown;
    /// it is reported as exit code -1, which no real program can return, so it counts
    /// as a failed attempt and never as a delivery.
    private static let statusLost = SubprocessResult.Termination.exited(-1)

    /// The WIFEXITED/WEXITSTATUS/WTERMSIG macros are not imported into Swift; these are
    /// their Linux definitions. Stopped/continued states never arrive because we wait
    /// without WUNTRACED/WCONTINUED.
    private static func termination(fromWaitStatus status: Int32) -> SubprocessResult.Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }
}
