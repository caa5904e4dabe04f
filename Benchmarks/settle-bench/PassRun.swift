import Foundation
import SettleApp
import SettleBase
import SettleConfig
import SettleLedger
import SettleEngine

/// What one pass cost, as measured inside the process that ran it.
struct PassResult {
    var orders: Int
    var finished: Int
    var wall: Double
    /// The process's own CPU seconds over the pass (hook processes excluded).
    var cpu: Double
    var peakRSSKiB: Int
    /// settle's own one-line pass summary (empty for Python).
    var summary: String
    /// Bytes the pass handed to write(2)/pwrite(2), and those that reached the block layer.
    var wchar: Int
    var writeBytes: Int
    /// The pass's context switches (0 where the reconciler does not report them).
    var contextSwitches: Int
    /// CPU seconds of the hook processes the pass ran (0 where the reconciler does not report them).
    var hooksCPU: Double

    var cpuPerOrderMs: Double { cpu * 1000 / Double(max(finished, 1)) }

    init(orders: Int, json line: JSONObjectLine, finishedKey: String) {
        self.orders = orders
        finished = line.int(finishedKey)
        wall = line.double("wall")
        cpu = line.double("cpu")
        peakRSSKiB = line.int("maxrss_kib")
        summary = line.string("summary")
        wchar = line.int("wchar")
        writeBytes = line.int("write_bytes")
        contextSwitches = line.int("context_switches")
        hooksCPU = line.double("hooks_cpu")
    }

    /// settle's own CPU and its hook processes', per settled order.
    var cpuWithHooksPerOrderMs: Double { (cpu + hooksCPU) * 1000 / Double(max(finished, 1)) }

    var contextSwitchesPerOrder: Double { Double(contextSwitches) / Double(max(finished, 1)) }
}

/// `settle-bench --run-pass CONFIG [--as-one-of-daemons N]`: one reconcile pass, in a process of
/// its own so that its CPU and peak RSS are settle's alone. Prints one JSON line. As one of N
/// daemons it registers in the ledger as `settle run` does and waits for the other N - 1, so each
/// pass takes its host's share of every store's rate from its start, as running daemons do.
enum PassChild {
    static func run(configurationPath: String, daemons: Int = 0) throws -> Never {
        // The malloc arenas and the stores, as `settle` sets them: the stores' configuration
        // sections are theirs to decode.
        MallocArenas.bound()
        StoreModules.all.register()
        let configuration = try Configuration.load(path: configurationPath, environment: [:])
        let ledger = try configuration.openLedger(.migrating, time: SystemTimeSource())
        if daemons > 0 {
            try ledger.recordDaemonStarted(.current)
            let deadline = Date().addingTimeInterval(60)
            while try ledger.liveDaemons().count < daemons {
                guard Date() < deadline else { throw BenchError("the other daemons did not register within 60 s") }
                usleep(20_000)
            }
        }
        // Lines are formatted as the daemon's are, then dropped instead of written to stderr.
        let log = Log(environment: [:], sink: { _ in })
        let reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: [:], log: log, modules: StoreModules.all)
        let cpuStart = ownCPUSeconds()
        let hooksStart = childrenCPUSeconds()
        let ioStart = IOCounters.now()
        let switchesStart = ownContextSwitches()
        let start = DispatchTime.now()
        let report = try reconciler.runPass()
        let wall = seconds(since: start)
        if daemons > 0 { try ledger.recordDaemonStopped(.current) }
        let cpu = ownCPUSeconds() - cpuStart
        let hooks = childrenCPUSeconds() - hooksStart
        let io = IOCounters.now()
        let switches = ownContextSwitches() - switchesStart
        let line = JSONValue.object([
            ("finished", .number(report.finished)), ("wall", .number(String(wall))), ("cpu", .number(String(cpu))),
            ("maxrss_kib", .number(peakRSSKiB())), ("summary", .string(report.summaryLine)),
            ("wchar", .number(io.wchar - ioStart.wchar)), ("write_bytes", .number(io.writeBytes - ioStart.writeBytes)),
            ("context_switches", .number(switches)), ("hooks_cpu", .number(String(hooks))),
        ])
        print(line.serialized())
        exit(0)
    }
}

/// Runs passes in child processes: settle's (`--run-pass`) and the Python reconciler's.
struct PassRunner {
    let bench: String
    let folder: BenchFolder
    let pythonReconciler: String
    let timeout: Double
    /// A profiler to run settle's passes under; empty for none.
    let wrapper: [String]

    func settle(orders: Int, apple: FakeAppleProcess?, delivery: BenchFolder.Delivery, concurrency: Int, tag: String,
                storeKit: Bool = false, syncs: SyncTrace? = nil,
                finishTransactions: Bool = BenchFolder.finishTransactions, profiler: [String]? = nil) throws -> PassResult {
        let ledger = try folder.dueLedger(name: "settle-\(tag)", orders: orders, storeKit: storeKit)
        let config = try folder.configuration(name: "settle-\(tag)", ledger: ledger, apple: apple, delivery: delivery,
                                              concurrency: concurrency, finishTransactions: finishTransactions)
        let (status, output) = try ChildProcess.run((syncs?.wrapper ?? profiler ?? wrapper) + [bench, "--run-pass", config], timeout: timeout)
        guard status == 0 else { throw BenchError("settle pass \(tag) exited \(status): \(output.suffix(400))") }
        let result = PassResult(orders: orders, json: try ChildProcess.lastJSON(output), finishedKey: "finished")
        try? FileManager.default.removeItem(atPath: ledger)
        return result
    }

    /// `daemons` passes at once over one PostgreSQL ledger holding `orders` due orders (seeded as
    /// SQLite, then moved with `LedgerCopy`, as an operator's `settle ledger copy` does).
    func settlePostgres(url: String, orders: Int, daemons: Int, apple: FakeAppleProcess, delivery: BenchFolder.Delivery,
                        concurrency: Int) throws -> [PassResult] {
        let sqlite = try folder.dueLedger(name: "settle-pg-seed", orders: orders)
        defer { try? FileManager.default.removeItem(atPath: sqlite) }
        let schema = "bench_\(getpid())_\(daemons)"
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        try admin.execute("SET client_min_messages = warning")
        try admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE") }
        let schemaURL = url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        let destination = try PostgresLedger(url: schemaURL, access: .migrating)
        _ = try LedgerCopy.copy(fromSQLite: sqlite, to: destination)
        try destination.close()
        let config = try folder.configuration(name: "settle-pg", ledger: schemaURL, apple: apple, delivery: delivery,
                                              concurrency: concurrency)
        let lock = NSLock()
        nonisolated(unsafe) var results: [Result<(status: Int32, output: String), Error>] = []
        let group = DispatchGroup()
        for _ in 0..<daemons {
            group.enter()
            Thread {
                defer { group.leave() }
                let result = Result { try ChildProcess.run([bench, "--run-pass", config], timeout: timeout) }
                lock.withLock { results.append(result) }
            }.start()
        }
        group.wait()
        return try results.map { result in
            let (status, output) = try result.get()
            guard status == 0 else { throw BenchError("settle pass on PostgreSQL exited \(status): \(output.suffix(400))") }
            return PassResult(orders: orders, json: try ChildProcess.lastJSON(output), finishedKey: "finished")
        }
    }

    func python(orders: Int, apple: FakeAppleProcess, delivery: BenchFolder.Delivery, concurrency: Int, tag: String,
                syncs: SyncTrace? = nil) throws -> PassResult {
        let ledger = try folder.dueLedger(name: "python-\(tag)", orders: orders)
        var arguments = (syncs?.wrapper ?? []) + ["/usr/bin/env", "python3", pythonReconciler, "--ledger", ledger, "--apple-url", apple.appleURL,
                         "--sandbox-url", apple.sandboxURL, "--secret-file", folder.path + "/secret",
                         "--bundle-id", BenchOrders.bundleId, "--concurrency", String(concurrency),
                         "--max-seconds", String(Int(timeout - 10))]
        switch delivery {
        case let .webhook(url): arguments += ["--webhook-url", url, "--webhook-secret-file", folder.path + "/webhook-secret"]
        case let .command(argv): arguments += ["--hook"] + argv
        case .batchCommand: throw BenchError("the Python reconciler has no batch delivery")
        }
        let (status, output) = try ChildProcess.run(arguments, timeout: timeout)
        guard status == 0 else { throw BenchError("python pass \(tag) exited \(status): \(output.suffix(400))") }
        let result = PassResult(orders: orders, json: try ChildProcess.lastJSON(output), finishedKey: "settled")
        try? FileManager.default.removeItem(atPath: ledger)
        return result
    }
}

/// Counts a pass's fsync(2) and fdatasync(2) calls with `strace -c` (a seccomp filter, so only
/// those calls stop the process): the durable commits, counted by the kernel.
struct SyncTrace {
    let output: String

    var wrapper: [String] {
        ["/usr/bin/strace", "-f", "-c", "--seccomp-bpf", "-e", "trace=fsync,fdatasync", "-o", output]
    }

    /// The calls strace counted.
    func calls() throws -> Int {
        let text = try String(contentsOfFile: output, encoding: .utf8)
        var total = 0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // "% time seconds usecs/call calls errors syscall": calls is the 4th field.
            if let name = fields.last, name == "fsync" || name == "fdatasync", fields.count >= 5, let calls = Int(fields[3]) {
                total += calls
            }
        }
        return total
    }
}
