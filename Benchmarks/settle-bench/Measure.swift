import Foundation

/// This process's own CPU time (user + system), children excluded: RUSAGE_SELF never counts
/// the hook processes a pass starts, nor the fake Apple, which runs in its own process.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU time (user + system) of this process's children that ended and were waited for: a pass's
/// hook processes (the fake Apple and the webhook receiver are not its children).
func childrenCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Voluntary context switches of this process's threads so far (involuntary ones measure the machine's load): each is a
/// thread that slept and was woken, the cost behind most of a pass's kernel time.
func ownContextSwitches() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_nvcsw
}

/// Peak resident set of this process so far, in KiB (Linux reports ru_maxrss in KiB).
func peakRSSKiB() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss
}

/// Monotonic seconds since `start`.
func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A child process whose stdout is read as text; killed if it outlives `timeout`.
enum ChildProcess {
    /// What a server child prints first (its URLs) once it is ready, waiting up to `seconds`;
    /// `what` names it in the error when it never does.
    static func firstLine(of output: Pipe, within seconds: Double, what: String) throws -> String {
        var buffer = Data()
        let handle = output.fileHandleForReading
        let deadline = Date().addingTimeInterval(seconds)
        while !buffer.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            guard !chunk.isEmpty, Date() < deadline else { throw BenchError("\(what) did not start") }
            buffer.append(chunk)
        }
        return String(decoding: buffer, as: UTF8.self)
    }

    /// The child outlived its time and was killed.
    struct Timeout: Error, CustomStringConvertible {
        var seconds: Double
        var description: String { "a child process did not finish in \(Int(seconds)) s and was killed" }
    }

    /// Runs `arguments[0]` with the rest as arguments, waits at most `timeout` seconds, and
    /// returns its exit status and standard output.
    static func run(_ arguments: [String], timeout: Double, stdin: FileHandle? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        // A bare name (a --pass-wrapper such as "valgrind") is looked up on PATH.
        process.executableURL = URL(fileURLWithPath: arguments[0].hasPrefix("/") ? arguments[0] : "/usr/bin/env")
        let arguments = arguments[0].hasPrefix("/") ? arguments : ["/usr/bin/env"] + arguments
        process.arguments = Array(arguments.dropFirst())
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = stdin ?? FileHandle.nullDevice
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        try process.run()
        // Read while it runs, so a full pipe can't stall the child.
        let collected = LockedData()
        let reader = Thread { collected.set(output.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            finished.wait()
            throw Timeout(seconds: timeout)
        }
        while !collected.isSet { usleep(1_000) }
        return (process.terminationStatus, String(decoding: collected.get(), as: UTF8.self))
    }

    /// The last line of `output` that parses as a JSON object.
    static func lastJSON(_ output: String) throws -> JSONObjectLine {
        for line in output.split(separator: "\n").reversed() {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                return JSONObjectLine(values: object)
            }
        }
        throw BenchError("no JSON result in output: \(output.suffix(400))")
    }
}

struct JSONObjectLine {
    var values: [String: Any]
    func double(_ key: String) -> Double { (values[key] as? NSNumber)?.doubleValue ?? .nan }
    func int(_ key: String) -> Int { (values[key] as? NSNumber)?.intValue ?? 0 }
    func string(_ key: String) -> String { values[key] as? String ?? "" }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ value: Data) { lock.withLock { data = value } }
    var isSet: Bool { lock.withLock { data != nil } }
    func get() -> Data { lock.withLock { data ?? Data() } }
}

/// Median of a few samples (the status views are timed three times each).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

/// This process's I/O counters from /proc/self/io: `wchar` counts every byte handed to
/// write(2)/pwrite(2) (the WAL and database pages, and the hooks' stdin), `write_bytes` what
/// reached the block layer (0 on a tmpfs).
struct IOCounters {
    var wchar = 0
    var writeBytes = 0

    static func now() -> IOCounters {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return IOCounters() }
        var counters = IOCounters()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            guard parts.count == 2, let value = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
            switch parts[0] {
            case "wchar": counters.wchar = value
            case "write_bytes": counters.writeBytes = value
            default: break
            }
        }
        return counters
    }
}

/// CPU seconds used so far by a running PostgreSQL server: the postmaster, its live
/// backends, and the backends that already exited (the postmaster's reaped children).
enum PostgresCPU {
    static func seconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        for pid in processes {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                  stat[stat.index(after: open)..<close] == "postgres" else { continue }
            // Fields after the command: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 14, let utime = Double(fields[11]), let stime = Double(fields[12]),
                  let cutime = Double(fields[13]), let cstime = Double(fields[14]) else { continue }
            total += (utime + stime + cutime + cstime) / ticks
        }
        return total
    }
}
