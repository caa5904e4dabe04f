import Foundation
import SettleCore

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

    var cpuPerOrderMs: Double { cpu * 1000 / Double(max(finished, 1)) }

    init(orders: Int, json line: JSONObjectLine, finishedKey: String) {
        self.orders = orders
        finished = line.int(finishedKey)
        wall = line.double("wall")
        cpu = line.double("cpu")
        peakRSSKiB = line.int("maxrss_kib")
        summary = line.string("summary")
    }
}

/// `settle-bench --run-pass CONFIG`: one reconcile pass, in a process of its own so that
/// its CPU and peak RSS are settle's alone. Prints one JSON line.
enum PassChild {
    static func run(configurationPath: String) throws -> Never {
        let configuration = try Configuration.load(path: configurationPath, environment: [:])
        let ledger = try Ledger(path: configuration.ledgerPath)
        // Lines are formatted as the daemon's are, then dropped instead of written to stderr.
        let log = Log(environment: [:], sink: { _ in })
        let reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: [:], log: log)
        let cpuStart = ownCPUSeconds()
        let start = DispatchTime.now()
        let report = try reconciler.runPass()
        let wall = seconds(since: start)
        let cpu = ownCPUSeconds() - cpuStart
        let line = JSONValue.object([
            ("finished", .number(report.finished)), ("wall", .number(String(wall))), ("cpu", .number(String(cpu))),
            ("maxrss_kib", .number(peakRSSKiB())), ("summary", .string(report.summaryLine)),
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
                storeKit: Bool = false) throws -> PassResult {
        let ledger = try folder.dueLedger(name: "settle-\(tag)", orders: orders, storeKit: storeKit)
        let config = try folder.configuration(name: "settle-\(tag)", ledger: ledger, apple: apple, delivery: delivery,
                                              concurrency: concurrency)
        let (status, output) = try ChildProcess.run(wrapper + [bench, "--run-pass", config], timeout: timeout)
        guard status == 0 else { throw BenchError("settle pass \(tag) exited \(status): \(output.suffix(400))") }
        let result = PassResult(orders: orders, json: try ChildProcess.lastJSON(output), finishedKey: "finished")
        try? FileManager.default.removeItem(atPath: ledger)
        return result
    }

    func python(orders: Int, apple: FakeAppleProcess, delivery: BenchFolder.Delivery, concurrency: Int, tag: String) throws -> PassResult {
        let ledger = try folder.dueLedger(name: "python-\(tag)", orders: orders)
        var arguments = ["/usr/bin/env", "python3", pythonReconciler, "--ledger", ledger, "--apple-url", apple.appleURL,
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
