#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc

extension Subprocess {
    /// Owns one file descriptor and closes it exactly once.
    ///
    /// `close()` does not report failure: on Linux the descriptor is released even when
    /// close fails (EINTR included), so a retry could close a descriptor another thread
    /// just opened, and for a pipe there is no buffered data a failure could lose.
    package final class FileDescriptor {
        private(set) var rawValue: Int32

        package init(_ rawValue: Int32) {
            self.rawValue = rawValue
        }

        deinit {
            close()
        }

        package func close() {
            guard rawValue >= 0 else { return }
            _ = Glibc.close(rawValue)
            rawValue = -1
        }

        /// For a pipe end `Pipe.make` created: its only status flag is its access mode, which
        /// F_SETFL ignores, so there is nothing to read first (one system call, not two).
        package func setNonBlocking() {
            _ = fcntl(rawValue, F_SETFL, O_NONBLOCK)
        }
    }

    /// Both ends of a pipe, close-on-exec from birth.
    package struct Pipe {
        package let readEnd: FileDescriptor
        package let writeEnd: FileDescriptor

        package static func make(program: String) throws(SubprocessError) -> Pipe {
            var ends: [Int32] = [-1, -1]
            let created: Int32
            if let pipe2 = GlibcExtensions.pipe2 {
                // Atomic close-on-exec: another thread's spawn can never inherit these.
                created = pipe2(&ends, O_CLOEXEC)
            } else {
                created = pipe(&ends)
                for end in ends where end >= 0 {
                    _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                }
            }
            guard created == 0 else {
                throw SubprocessError(message: "cannot run \(program): cannot create a pipe: \(describe(errno: errno))")
            }
            var liftError: Int32 = 0
            let readEnd = FileDescriptor(liftAboveStandardStreams(ends[0], error: &liftError))
            let writeEnd = FileDescriptor(liftAboveStandardStreams(ends[1], error: &liftError))
            guard readEnd.rawValue >= 0, writeEnd.rawValue >= 0 else {
                throw SubprocessError(message: "cannot run \(program): cannot create a pipe: \(describe(errno: liftError))")
            }
            return Pipe(readEnd: readEnd, writeEnd: writeEnd)
        }

        /// If the daemon runs with 0, 1 or 2 closed, pipe() hands those numbers out, and the
        /// child's dup2 onto 0/1/2 could overwrite one pipe end before duplicating it.
        /// Returns a descriptor above 2 (closing the original) or -1 with `error` set.
        private static func liftAboveStandardStreams(_ descriptor: Int32, error: inout Int32) -> Int32 {
            guard descriptor <= STDERR_FILENO else { return descriptor }
            let lifted = fcntl(descriptor, F_DUPFD_CLOEXEC, STDERR_FILENO + 1)
            if lifted < 0 { error = errno }
            _ = Glibc.close(descriptor)
            return lifted
        }
    }

    /// Spawns `program` as the leader of a new process group with stdin from
    /// `standardInput`, stdout and stderr both into `output`, no other descriptors,
    /// an empty signal mask and every signal at its default disposition.
    package static func spawn(program: String, arguments: [String], environment: [String: String],
                      standardInput: FileDescriptor, output: FileDescriptor) throws(SubprocessError) -> pid_t {
        func failure(_ reason: String) -> SubprocessError {
            SubprocessError(message: "cannot run \(program): \(reason)")
        }
        var attributes = posix_spawnattr_t()
        guard posix_spawnattr_init(&attributes) == 0 else { throw failure("out of memory") }
        defer { posix_spawnattr_destroy(&attributes) }
        var actions = posix_spawn_file_actions_t()
        guard posix_spawn_file_actions_init(&actions) == 0 else { throw failure("out of memory") }
        defer { posix_spawn_file_actions_destroy(&actions) }

        // A new process group led by the child (pgroup 0 = its own pid), so a timeout can
        // kill the hook together with everything it started.
        // The daemon blocks or ignores signals for its own reasons (SIGPIPE is ignored,
        // see `sigpipeIgnored`); a hook must start with the ordinary defaults, or e.g.
        // `producer | head` would behave differently under settle than in a terminal.
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        let flags = Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        for result in [posix_spawnattr_setpgroup(&attributes, 0),
                       posix_spawnattr_setsigmask(&attributes, &emptyMask),
                       posix_spawnattr_setsigdefault(&attributes, &allSignals),
                       posix_spawnattr_setflags(&attributes, flags)] where result != 0 {
            throw failure(describe(errno: result))
        }

        // dup2 clears close-on-exec on the copies, so exactly 0, 1 and 2 survive exec.
        for result in [posix_spawn_file_actions_adddup2(&actions, standardInput.rawValue, STDIN_FILENO),
                       posix_spawn_file_actions_adddup2(&actions, output.rawValue, STDOUT_FILENO),
                       posix_spawn_file_actions_adddup2(&actions, output.rawValue, STDERR_FILENO)]
            where result != 0 {
            throw failure(describe(errno: result))
        }
        closeInheritedDescriptors(&actions)

        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // Sorted only so that runs are reproducible when debugging with /proc/PID/environ.
        let variables = environment.sorted { $0.key < $1.key }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        if argv.dropLast().contains(nil) || envp.dropLast().contains(nil) {
            throw failure("out of memory")
        }
        // A C string ends at its first NUL: a copy shorter than its string had one, which would
        // cut the argument or variable short. (Measured on the copies, not scanned apart.)
        for (copy, argument) in zip(argv, arguments) where strlen(copy!) != argument.utf8.count {
            throw failure("an argument contains a NUL byte")
        }
        for (copy, (name, value)) in zip(envp, variables) {
            let (copy, length) = (copy!, strlen(copy!))
            // Only the name goes into the message: values may be secrets. A name is cut by a NUL
            // (shorter), or holds an "=" (the copy's first one comes before the one written after it).
            if name.isEmpty || length < name.utf8.count || strchr(copy, Int32(UInt8(ascii: "=")))! - copy != name.utf8.count {
                throw failure("invalid environment variable name \"\(name)\"")
            }
            if length != name.utf8.count + 1 + value.utf8.count {
                throw failure("environment variable \(name) contains a NUL byte")
            }
        }

        var pid: pid_t = 0
        // posix_spawn, not posix_spawnp: no PATH search. glibc runs the child with
        // CLONE_VFORK and reports exec failures (ENOENT, EACCES, ENOEXEC) as this result.
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else {
            // execve(2)'s answers about the file itself; others (EAGAIN, ENOMEM) are of the moment.
            let unusable = [ENOENT, EACCES, ENOEXEC, ENOTDIR, EISDIR, ELOOP, ENAMETOOLONG, EPERM, ETXTBSY].contains(result)
            throw SubprocessError(message: "cannot run \(program): \(describe(errno: result))", programUnusable: unusable)
        }
        return pid
    }

    /// Other code in the daemon (libcurl, SQLite, a systemd socket) may hold descriptors
    /// without close-on-exec; a hook must see none of them.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        if let closeFrom = GlibcExtensions.addCloseFrom,
           closeFrom(&actions, STDERR_FILENO + 1) == 0 {
            return
        }
        // Older glibc: close what is open now. Racy against other threads opening files,
        // which is why the closefrom action is preferred. glibc ignores EBADF for close
        // actions, so a descriptor closed in the meantime does no harm.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for name in names {
            guard let descriptor = Int32(name), descriptor > STDERR_FILENO else { continue }
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 {
                _ = posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
    }

    /// A descriptor that becomes readable when `pid` exits, letting the wait loop sleep
    /// in poll instead of waking up to ask waitpid. Nil where the kernel (before 5.3) or
    /// a seccomp policy refuses it.
    package static func openPidfd(_ pid: pid_t) -> FileDescriptor? {
        guard let pidfdOpen = GlibcExtensions.pidfdOpen else { return nil }
        let descriptor = pidfdOpen(pid, 0)
        return descriptor >= 0 ? FileDescriptor(descriptor) : nil
    }

    package static func describe(errno code: Int32) -> String {
        // glibc's strerror is thread-safe since 2.32 (per-thread buffer for unknown codes).
        String(cString: strerror(code))
    }
}

/// glibc functions that Swift's Glibc module hides because it is imported without
/// _GNU_SOURCE. Looking them up at run time keeps this target pure Swift (no C shim)
/// and lets the code fall back gracefully where a symbol is missing.
private enum GlibcExtensions {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32

    /// glibc 2.9.
    static let pipe2: Pipe2? = symbol("pipe2", as: Pipe2.self)
    /// glibc 2.34; closes every descriptor >= n in the child, however many there are.
    static let addCloseFrom: AddCloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np",
                                                    as: AddCloseFrom.self)
    /// glibc 2.36.
    static let pidfdOpen: PidfdOpen? = symbol("pidfd_open", as: PidfdOpen.self)

    private static func symbol<F>(_ name: String, as type: F.Type) -> F? {
        // A nil handle is RTLD_DEFAULT: search the objects already loaded, libc included.
        dlsym(nil, name).map { unsafeBitCast($0, to: type) }
    }
}
