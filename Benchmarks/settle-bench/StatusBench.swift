import Foundation

/// `settle status` on a big ledger, timed end to end as an operator runs it (the `settle`
/// binary, process start included): the median of three runs after one warm-up.
struct StatusBench {
    let settle: String
    let folder: BenchFolder

    struct View {
        var name: String
        var arguments: [String]
    }

    func run(orders: Int) throws -> [(view: View, ms: Double)] {
        let seedStart = DispatchTime.now()
        let ledger = try folder.statusLedger(orders: orders)
        let seeded = seconds(since: seedStart)
        print(String(format: "  (status ledger: %d orders seeded with SQL in %.1f s)", orders, seeded))
        let config = try folder.configuration(name: "status", ledger: ledger, apple: nil, delivery: .command(["/bin/true"]),
                                              concurrency: 8)
        let middle = orders / 2 + 1  // finished (i % 100 < 94)
        let views = [
            View(name: "default view", arguments: []),
            View(name: "--transaction", arguments: ["--transaction", String(3_000_000_000 + middle)]),
            View(name: "--state needs_attention", arguments: ["--state", "needs_attention"]),
            View(name: "--user", arguments: ["--user", "u-123"]),
            View(name: "ORDER_ID", arguments: ["o-\(middle)"]),
        ]
        var results: [(View, Double)] = []
        for view in views {
            var samples: [Double] = []
            for attempt in 0..<4 {
                let start = DispatchTime.now()
                let (status, output) = try ChildProcess.run([settle, "status", "--config", config] + view.arguments, timeout: 120)
                guard status == 0 else { throw BenchError("settle status \(view.arguments) exited \(status): \(output.prefix(300))") }
                if attempt > 0 { samples.append(seconds(since: start) * 1000) }
            }
            results.append((view, median(samples)))
        }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: ledger + suffix) }
        return results
    }
}
