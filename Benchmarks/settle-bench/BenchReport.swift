import Foundation
import SettleApp

/// Runs the selected rows and prints them as they finish, then the whole table again.
struct BenchReport {
    let options: BenchOptions
    private var table: [String] = []

    init(options: BenchOptions) {
        self.options = options
    }

    mutating func run() throws {
        let bench = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let binaries = URL(fileURLWithPath: bench).deletingLastPathComponent().path
        let folder = try BenchFolder()
        defer { folder.remove() }
        let runner = PassRunner(bench: bench, folder: folder, pythonReconciler: options.pythonDirectory + "/reconcile.py",
                                timeout: options.passTimeout, wrapper: options.passWrapper)
        let sizes = options.passSizes.map(String.init).joined(separator: ", ")
        emit("settle-bench: \(ProcessInfo.processInfo.activeProcessorCount) cores\(options.quick ? ", --quick" : "");"
             + " N=\(options.orders) C=\(options.concurrency) L=\(options.latencyMs) ms; passes at \(sizes);"
             + " status ledger \(options.statusOrders); JWS \(options.jwsSeconds) CPU-s a case;"
             + " rows \(options.rows.sorted().joined(separator: ","))\(options.python ? "" : "; no Python")")
        emit("settle's CPU is getrusage(RUSAGE_SELF) of the process that ran the pass; hooks and the fake Apple are other processes.")
        if options.rows.contains("network") { try networkRows(runner, bench: bench, folder: folder) }
        if options.rows.contains("spawn") { try SpawnRows(options: options, folder: folder).run { emit($0) } }
        if options.rows.contains("durability") { try durabilityRows(runner, bench: bench, folder: folder) }
        if options.rows.contains("postgres") { try postgresRows(runner, bench: bench, folder: folder) }
        if options.rows.contains("pass") { try passRows(runner, bench: bench, folder: folder) }
        if options.rows.contains("instructions") { try InstructionRows(options: options, runner: runner, bench: bench).run { emit($0) } }
        if options.rows.contains("jws") { try jwsRows(runner, bench: bench, folder: folder) }
        if options.rows.contains("status") { try statusRows(settle: binaries + "/settle", folder: folder) }
        if options.rows.contains("web") { try webRows(settle: binaries + "/settle", folder: folder) }
        if options.rows.contains("pgstatus") {
            let rows = PostgresStatusRows(settle: binaries + "/settle", folder: folder, orders: options.statusOrders)
            try rows.run { emit($0) }
        }
        if options.rows.contains("finish") { try FinishRows(options: options, runner: runner, bench: bench).run { emit($0) } }
        if options.rows.contains("rate") { try RateRows(options: options, bench: bench, folder: folder).run { emit($0) } }
        if options.rows.contains("rate") || options.rows.contains("learned") {
            try LearnedRateRows(options: options, bench: bench, folder: folder).run { emit($0) }
        }
        print("\n==== summary ====")
        for line in table { print(line) }
    }

    mutating func emit(_ line: String) {
        print(line)
        fflush(nil)
        table.append(line)
    }

    // MARK: Rows

    private mutating func networkRows(_ runner: PassRunner, bench: String, folder: BenchFolder) throws {
        let n = options.orders, c = options.concurrency, l = options.latencyMs
        let bound = Double(n) * Double(l) / 1000 / Double(c)
        emit(String(format: "\n-- %d due orders, concurrency %d, Apple at %d ms: wall / (N·L/C = %.2f s); goal <= 1.10; CPU goal <= 0.5 ms/order", n, c, l, bound))
        emit(Self.columns("measure", "settle", "python", "python/settle"))
        let deliveries: [(String, BenchFolder.Delivery)] = [
            ("command hook", .command([folder.path + "/hook.sh"])), ("webhook", .webhook("")),
            ("batch hook (32)", .batchCommand([folder.path + "/batch-hook.sh"], batch: 32)),
        ]
        for (name, delivery) in deliveries {
            var appleTraffic = (connections: 0, requests: 0)
            let settle = try withApple(bench, folder: folder, orders: n, latencyMs: l, traffic: &appleTraffic) { apple in
                try runner.settle(orders: n, apple: apple, delivery: resolved(delivery, apple), concurrency: c, tag: "net")
            }
            var pythonTraffic = (connections: 0, requests: 0)
            var runsPython = options.python
            if case .batchCommand = delivery { runsPython = false }
            let python = try runsPython ? withApple(bench, folder: folder, orders: n, latencyMs: l, traffic: &pythonTraffic) { apple in
                try runner.python(orders: n, apple: apple, delivery: resolved(delivery, apple), concurrency: c, tag: "net")
            } : nil
            check(settle, "settle \(name)")
            if let python { check(python, "python \(name)") }
            emit(Self.columns("wall / bound, \(name)", String(format: "%.2f (%.1f s)", settle.wall / bound, settle.wall),
                              python.map { String(format: "%.2f (%.1f s)", $0.wall / bound, $0.wall) } ?? "-",
                              python.map { String(format: "%.2fx", $0.wall / settle.wall) } ?? "-"))
            emit(Self.columns("own CPU per settled order, \(name)", String(format: "%.3f ms", settle.cpuPerOrderMs),
                              python.map { String(format: "%.3f ms", $0.cpuPerOrderMs) } ?? "-",
                              python.map { String(format: "%.1fx", $0.cpuPerOrderMs / settle.cpuPerOrderMs) } ?? "-"))
            let receiver = if case .webhook = delivery { " (its receiver is another process)" } else { "" }
            emit(Self.columns("CPU per settled order with hooks, \(name)",
                              String(format: "%.3f ms", settle.cpuWithHooksPerOrderMs) + receiver, "-", ""))
            emit(Self.columns("voluntary context switches per order, \(name)", String(format: "%.1f", settle.contextSwitchesPerOrder),
                              python.map { String(format: "%.1f", $0.contextSwitchesPerOrder) } ?? "-", ""))
            emit(Self.columns("peak RSS, \(name)", "\(settle.peakRSSKiB / 1024) MiB",
                              python.map { "\($0.peakRSSKiB / 1024) MiB" } ?? "-", ""))
            emit(Self.columns("connections to Apple, \(name)", "\(appleTraffic.connections) for \(appleTraffic.requests) requests",
                              python == nil ? "-" : "\(pythonTraffic.connections) for \(pythonTraffic.requests) requests", ""))
        }
    }

    /// fsyncs and bytes written per settled order: the kernel work behind each durable transition.
    private mutating func durabilityRows(_ runner: PassRunner, bench: String, folder: BenchFolder) throws {
        let n = options.orders, c = options.concurrency, l = options.latencyMs
        emit("\n-- durability: \(n) due orders, concurrency \(c), Apple at \(l) ms, command hook; fsync+fdatasync counted by strace -c, bytes from /proc/self/io; goal <= 1.5 fsyncs/order")
        emit(Self.columns("measure", "settle", "python", "python/settle"))
        let trace = SyncTrace(output: folder.path + "/syncs.txt")
        let delivery = BenchFolder.Delivery.command([folder.path + "/hook.sh"])
        let settle = try withApple(bench, folder: folder, orders: n, latencyMs: l) { apple in
            try runner.settle(orders: n, apple: apple, delivery: delivery, concurrency: c, tag: "sync", syncs: trace)
        }
        let settleSyncs = try trace.calls()
        check(settle, "settle durability")
        var python: (PassResult, Int)?
        if options.python {
            let result = try withApple(bench, folder: folder, orders: n, latencyMs: l) { apple in
                try runner.python(orders: n, apple: apple, delivery: delivery, concurrency: c, tag: "sync", syncs: trace)
            }
            python = (result, try trace.calls())
        }
        func perOrder(_ value: Int, _ result: PassResult) -> Double { Double(value) / Double(max(result.finished, 1)) }
        emit(Self.columns("fsyncs per settled order", String(format: "%.2f (%d for %d)", perOrder(settleSyncs, settle), settleSyncs, settle.finished),
                          python.map { String(format: "%.2f (%d for %d)", perOrder($0.1, $0.0), $0.1, $0.0.finished) } ?? "-", ""))
        emit(Self.columns("bytes written per order (write/pwrite)", String(format: "%.0f B", perOrder(settle.wchar, settle)),
                          python.map { String(format: "%.0f B", perOrder($0.0.wchar, $0.0)) } ?? "-", ""))
        emit(Self.columns("bytes to the block layer per order", String(format: "%.0f B", perOrder(settle.writeBytes, settle)),
                          python.map { String(format: "%.0f B", perOrder($0.0.writeBytes, $0.0)) } ?? "-", ""))
    }

    /// Throughput of 1, 2 and 3 settle passes at once on one PostgreSQL ledger, with the CPU per
    /// order of settle and of the database.
    private mutating func postgresRows(_ runner: PassRunner, bench: String, folder: BenchFolder) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["SETTLE_BENCH_POSTGRES_URL"] ?? environment["SETTLE_TEST_POSTGRES_URL"] else {
            emit("\n-- PostgreSQL: no server (set SETTLE_BENCH_POSTGRES_URL, or eval \"$(scripts/test-postgres.sh start)\")")
            return
        }
        let n = options.orders, c = options.concurrency, l = options.latencyMs
        let bound = Double(n) * Double(l) / 1000 / Double(c)
        emit(String(format: "\n-- PostgreSQL ledger on this machine: %d due orders, concurrency %d each, Apple at %d ms, webhook; one daemon's bound N·L/C = %.2f s", n, c, l, bound))
        emit(Self.columns("daemons on one database", "wall (orders/s)", "settle CPU/order", "database CPU/order"))
        for daemons in 1...3 {
            let databaseStart = PostgresCPU.seconds()
            let start = DispatchTime.now()
            let results = try withApple(bench, folder: folder, orders: n, latencyMs: l) { apple in
                try runner.settlePostgres(url: url, orders: n, daemons: daemons, apple: apple, delivery: .webhook(apple.webhookURL),
                                          concurrency: c)
            }
            let wall = seconds(since: start)
            let database = PostgresCPU.seconds() - databaseStart
            let finished = results.reduce(0) { $0 + $1.finished }
            let passWall = results.map(\.wall).max() ?? wall
            let cpu = results.reduce(0) { $0 + $1.cpu }
            if finished != n { print("  warning: \(daemons) daemons finished \(finished) of \(n) orders") }
            emit(Self.columns("\(daemons)", String(format: "%.2f s (%.0f/s)", passWall, Double(finished) / passWall),
                              String(format: "%.3f ms", cpu * 1000 / Double(max(finished, 1))),
                              String(format: "%.3f ms", database * 1000 / Double(max(finished, 1)))))
        }
    }

    private mutating func passRows(_ runner: PassRunner, bench: String, folder: BenchFolder) throws {
        emit("\n-- a pass over N due orders, hook /bin/true, Apple at 0 ms, concurrency \(options.concurrency); goal: linear; RSS <= 64 MiB, flat")
        emit(Self.columns("due orders", "settle", "python", "python/settle"))
        var results: [(Int, PassResult)] = []
        for size in options.passSizes {
            let settle: PassResult
            do {
                settle = try withApple(bench, folder: folder, orders: size, latencyMs: 0) { apple in
                    try runner.settle(orders: size, apple: apple, delivery: .command(["/bin/true"]), concurrency: options.concurrency,
                                      tag: "pass")
                }
            } catch let error as ChildProcess.Timeout {
                // A pass that outlives --pass-timeout is a result too (the issue's "not done in 420 s").
                emit(Self.columns("\(size)", "not done in \(Int(error.seconds)) s", "", ""))
                continue
            }
            check(settle, "settle pass \(size)")
            // Python at the sizes the issue ran it (up to 10 k); beyond, it only adds minutes.
            let python = try options.python && size <= 10_000 ? withApple(bench, folder: folder, orders: size, latencyMs: 0) { apple in
                try runner.python(orders: size, apple: apple, delivery: .command(["/bin/true"]), concurrency: options.concurrency,
                                  tag: "pass")
            } : nil
            results.append((size, settle))
            emit(Self.columns("\(size)", Self.passCell(settle), python.map(Self.passCell) ?? "-",
                              python.map { String(format: "%.2fx", $0.wall / settle.wall) } ?? "-"))
        }
        if results.count > 1, let (smallSize, small) = results.first, let (bigSize, big) = results.last {
            let ratio = big.wall / small.wall, sizeRatio = Double(bigSize) / Double(smallSize)
            emit(String(format: "  linearity: %d orders took %.2fx the time of %d (%.0fx the orders); peak RSS %d -> %d MiB",
                        bigSize, ratio, smallSize, sizeRatio, small.peakRSSKiB / 1024, big.peakRSSKiB / 1024))
        }
    }

    private mutating func jwsRows(_ runner: PassRunner, bench: String, folder: BenchFolder) throws {
        let jws = JWSBench(folder: folder, fixtures: options.fixtures, cpuSeconds: options.jwsSeconds)
        emit("\n-- StoreKit 2 JWS verifications per CPU-second, offline, same token; goal >= 5x Apple's Python library")
        emit(Self.columns("chain", "settle", "python library", "settle/python"))
        for bench in try jws.cases() {
            let (cached, firstSight) = try jws.settleRates(bench)
            let python = options.python ? try jws.pythonRate(bench, script: options.pythonDirectory + "/jws_bench.py") : nil
            emit(Self.columns(bench.name, String(format: "%.0f/s (first sight %.0f/s)", cached, firstSight),
                              python.map { String(format: "%.0f/s", $0) } ?? "-",
                              python.map { String(format: "%.1fx", cached / $0) } ?? "-"))
        }
        let (cpuMs, wallMs) = try jws.concurrentCostMs()
        emit(String(format: "  per JWS with 32 threads sharing one verifier, as a pass's workers (goal <= 0.3 ms): %.3f ms CPU, %.3f ms wall per thread",
                    cpuMs, wallMs))
        // A whole pass of StoreKit 2 orders: Server API call, bearer token, JWS, hook.
        let size = options.passSizes.first ?? 1_000
        let storeKit = try withApple(bench, folder: folder, orders: size, latencyMs: 0) { apple in
            try runner.settle(orders: size, apple: apple, delivery: .command(["/bin/true"]), concurrency: options.concurrency,
                              tag: "storekit", storeKit: true)
        }
        check(storeKit, "settle StoreKit 2 pass")
        emit(String(format: "  a pass over %d StoreKit 2 orders (Server API + JWS each), hook /bin/true, Apple at 0 ms: %.2f s, %.2f ms CPU/order",
                    size, storeKit.wall, storeKit.cpuPerOrderMs))
    }

    private mutating func statusRows(settle: String, folder: BenchFolder) throws {
        emit("\n-- settle status on a ledger of \(options.statusOrders) orders (process wall, median of 3); goal < 100 ms each")
        let results = try StatusBench(settle: settle, folder: folder).run(orders: options.statusOrders)
        for (view, ms) in results {
            emit(Self.columns("status \(view.name)", String(format: "%.0f ms", ms), "", ""))
        }
    }

    private mutating func webRows(settle: String, folder: BenchFolder) throws {
        emit("\n-- settle web on a ledger of \(options.statusOrders) orders (read-only, loopback, libcurl; request to last byte); goal < 100 ms each")
        let environment = ProcessInfo.processInfo.environment
        let postgres = environment["SETTLE_BENCH_POSTGRES_URL"] ?? environment["SETTLE_TEST_POSTGRES_URL"]
        let runs = try WebBench(settle: settle, folder: folder).run(orders: options.statusOrders, postgres: postgres)
        for (engine, timings) in [("SQLite", runs.sqlite), ("PostgreSQL", runs.postgres)] {
            guard let timings else {
                emit("  (PostgreSQL: no server; set SETTLE_BENCH_POSTGRES_URL, or eval \"$(scripts/test-postgres.sh start)\")")
                continue
            }
            emit(Self.columns("page, \(engine)", "first fetch / median of 5", "bytes", ""))
            for timing in timings {
                emit(Self.columns("web \(timing.page.name)", String(format: "%.1f ms / %.1f ms", timing.firstMs, timing.medianMs),
                                  String(timing.bytes), timing.medianMs < 100 && timing.firstMs < 100 ? "" : "over 100 ms"))
            }
        }
    }

    // MARK: Helpers

    private func withApple<T>(_ bench: String, folder: BenchFolder, orders: Int, latencyMs: Int,
                              _ body: (FakeAppleProcess) throws -> T) throws -> T {
        var traffic = (connections: 0, requests: 0)
        return try withApple(bench, folder: folder, orders: orders, latencyMs: latencyMs, traffic: &traffic, body)
    }

    /// Runs `body` against a fresh fake Apple (scripted answers are used up by one pass) and
    /// reports the connections and requests it saw.
    private func withApple<T>(_ bench: String, folder: BenchFolder, orders: Int, latencyMs: Int,
                              traffic: inout (connections: Int, requests: Int),
                              _ body: (FakeAppleProcess) throws -> T) throws -> T {
        let apple = try FakeAppleProcess(bench: bench, folder: folder, orders: orders, latencyMs: latencyMs)
        do {
            let result = try body(apple)
            traffic = apple.stop()
            return result
        } catch {
            apple.stop()
            throw error
        }
    }

    private func resolved(_ delivery: BenchFolder.Delivery, _ apple: FakeAppleProcess) -> BenchFolder.Delivery {
        if case .webhook = delivery { return .webhook(apple.webhookURL) }
        return delivery
    }

    private func check(_ result: PassResult, _ name: String) {
        if result.finished != result.orders {
            print("  warning: \(name) finished \(result.finished) of \(result.orders) orders \(result.summary)")
        }
    }

    private static func passCell(_ result: PassResult) -> String {
        String(format: "%.2f s, %.2f ms CPU/order, %d MiB", result.wall, result.cpuPerOrderMs, result.peakRSSKiB / 1024)
    }

    static func columns(_ a: String, _ b: String, _ c: String, _ d: String) -> String {
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count) }
        return pad(a, 40) + pad(b, 38) + pad(c, 34) + d
    }
}
