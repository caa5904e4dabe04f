import Foundation
import SettleLedger

/// `--rows pgstatus` (issue 38): the status ledger (a million orders by default) moved to
/// PostgreSQL by the release `settle ledger copy` (rows a second, its peak RSS), then every
/// summary view of `settle status` and the console's pages on it: the first run, then the
/// median of five. Goal: each under 100 ms; the copy at 50,000 rows a second or more.
struct PostgresStatusRows {
    let settle: String
    let folder: BenchFolder
    let orders: Int

    func run(_ emit: (String) -> Void) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let server = environment["SETTLE_BENCH_POSTGRES_URL"] ?? environment["SETTLE_TEST_POSTGRES_URL"] else {
            emit("\n-- PostgreSQL status: no server (set SETTLE_BENCH_POSTGRES_URL,"
                 + " or eval \"$(scripts/test-postgres.sh start)\")")
            return
        }
        emit("\n-- PostgreSQL ledger of \(orders) orders: settle ledger copy, then settle status and settle web on it;"
             + " goal < 100 ms each")
        let ledger = try folder.statusLedger(orders: orders)
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: ledger + suffix) } }
        let schema = "bench_pgstatus_\(getpid())"
        let admin = try PostgresConnection(url: server)
        defer { admin.close() }
        try admin.execute("SET client_min_messages = warning; DROP SCHEMA IF EXISTS \(schema) CASCADE;"
                          + " CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE") }
        let url = server + (server.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        try copyRow(from: ledger, to: url, emit)
        let config = try folder.configuration(name: "pgstatus", ledger: url, apple: nil,
                                              delivery: .command(["/bin/true"]), concurrency: 8)
        emit(BenchReport.columns("settle status, PostgreSQL", "first / median of 5 (process wall)", "", ""))
        let middle = orders / 2 + 1  // finished (i % 100 < 94)
        let views: [(String, [String])] = [
            ("default view", []), ("--json", ["--json"]), ("--state needs_attention", ["--state", "needs_attention"]),
            ("--transaction", ["--transaction", String(3_000_000_000 + middle)]), ("--user", ["--user", "u-123"]),
            ("ORDER_ID", ["o-\(middle)"]),
        ]
        for (name, arguments) in views {
            var samples: [Double] = []
            for _ in 0..<6 {
                let start = DispatchTime.now()
                let (status, output) = try ChildProcess.run([settle, "status", "--config", config] + arguments,
                                                            timeout: 120)
                guard status == 0 else {
                    throw BenchError("settle status \(arguments) exited \(status): \(output.prefix(300))")
                }
                samples.append(seconds(since: start) * 1000)
            }
            let median = median(Array(samples.dropFirst()))
            emit(BenchReport.columns("status \(name)", String(format: "%.0f / %.0f ms", samples[0], median), "",
                                     median < 100 && samples[0] < 100 ? "" : "over 100 ms"))
        }
        emit(BenchReport.columns("page, PostgreSQL", "first fetch / median of 5", "bytes", ""))
        for timing in try WebBench(settle: settle, folder: folder).pages(ledger: url, orders: orders) {
            let cell = String(format: "%.1f ms / %.1f ms", timing.firstMs, timing.medianMs)
            let over = timing.medianMs < 100 && timing.firstMs < 100 ? "" : "over 100 ms"
            emit(BenchReport.columns("web \(timing.page.name)", cell, String(timing.bytes), over))
        }
    }

    /// The release `settle ledger copy` under /usr/bin/time: wall, rows a second (every table's
    /// rows, as it reports them) and its peak RSS.
    private func copyRow(from ledger: String, to url: String, _ emit: (String) -> Void) throws {
        let rss = folder.path + "/copy-maxrss.txt"
        let start = DispatchTime.now()
        let (status, output) = try ChildProcess.run(["/usr/bin/time", "-o", rss, "-f", "%M", settle, "ledger", "copy",
                                                     "--from", "sqlite:" + ledger, "--to", url], timeout: 1800)
        let wall = seconds(since: start)
        guard status == 0 else { throw BenchError("settle ledger copy exited \(status): \(output.suffix(300))") }
        // "orders: 1,000,000 rows copied, counts match"
        let rows = output.split(separator: "\n").compactMap { line -> Int? in
            guard let colon = line.firstIndex(of: ":"), line.contains("copied") else { return nil }
            return Int(line[line.index(after: colon)...].split(separator: " ").first?.filter(\.isNumber) ?? "")
        }.reduce(0, +)
        let written = try? String(contentsOfFile: rss, encoding: .utf8)
        let peak = written.flatMap { Int($0.split(separator: "\n").last ?? "") } ?? 0
        let rate = Double(rows) / wall
        let cell = String(format: "%d rows in %.1f s (%.0f rows/s)", rows, wall, rate)
        emit(BenchReport.columns("settle ledger copy (all tables)", cell,
                                 "peak RSS \(peak / 1024) MiB", rate >= 50_000 ? "" : "under 50,000 rows/s"))
    }
}
