import Foundation
import SettleApp
import SettleBase

/// The learned-rate rows (issue 38, `--rows rate` or `--rows learned`): a verifyReceipt backlog
/// against the fake Apple answering 429 (with `Retry-After`) beyond a limit settle is NOT told:
/// `receipt_api.rate_limits` is left at its default ceiling (1000/s), so the pacer must learn the
/// limit from the 429s. Measured from what the fake's limit counted: drained throughput over the
/// limit, and the 429s after the first 10 s as a share of the requests then; one host, and two
/// hosts sharing a PostgreSQL ledger when `SETTLE_BENCH_POSTGRES_URL` names a server.
struct LearnedRateRows {
    let options: BenchOptions
    let bench: String
    let folder: BenchFolder

    var orders: Int { options.rateOrders }
    var rate: Double { Double(options.rateLimit) }
    /// Seconds of learning left out of the 429 share.
    static let learning = 10

    func run(_ emit: (String) -> Void) throws {
        emit(String(format: "\n-- a learned rate: %d due verifyReceipt orders against a fake Apple that answers 429 with Retry-After over %d/s; settle is not told (receipt_api.rate_limits at its default ceiling, 1000/s); webhook; concurrency %d",
                    orders, Int(rate), options.concurrency))
        emit(RateRows.columns("measure", "measured", "goal"))
        let one = try drain(tag: "learned", hosts: 1)
        report("one host", one, emit)
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["SETTLE_BENCH_POSTGRES_URL"] ?? environment["SETTLE_TEST_POSTGRES_URL"] else {
            emit(RateRows.columns("two hosts on one PostgreSQL ledger", "no server (set SETTLE_BENCH_POSTGRES_URL)", ""))
            return
        }
        let two = try drain(tag: "learned-pg", hosts: 2, postgres: url)
        report("two hosts (PostgreSQL)", two, emit)
    }

    private func report(_ name: String, _ run: (passes: [PassResult], counts: GroupCounts?), _ emit: (String) -> Void) {
        guard let c = run.counts else { return emit(RateRows.columns("\(name): verify_receipt", "no requests", "")) }
        emit(RateRows.columns("\(name): drained throughput / limit", String(format: "%.3f (%.1f/s over %d s)", c.steadyRate / rate,
                                                                               c.steadyRate, c.drainSeconds), ">= 0.95"))
        let after = Self.learning
        let refused = c.refusalsPerSecond.dropFirst(after).reduce(0, +), granted = c.grantsPerSecond.dropFirst(after).reduce(0, +)
        let share = granted + refused > 0 ? Double(refused) / Double(granted + refused) : 0
        emit(RateRows.columns("\(name): 429s after the first \(after) s / requests", String(format: "%.4f (%d of %d; in the first %d s: %d)",
                                                                                   share, refused, granted + refused, after,
                                                                                   c.refused - refused), "<= 0.01"))
        let finished = run.passes.reduce(0) { $0 + $1.finished }
        emit(RateRows.columns("\(name): the drain", "\(finished) of \(orders) settled in \(run.passes.count) pass(es), "
                              + String(format: "%.1f s", run.passes.map(\.wall).max() ?? 0), "all"))
        emit("  (\(name), granted a second / refused a second: \(c.grantsPerSecond.map(String.init).joined(separator: " ")) / \(c.refusalsPerSecond.map(String.init).joined(separator: " ")))")
        for pass in run.passes where pass.finished != orders { emit("  (\(name), a pass: \(pass.summary))") }
    }

    /// One drain: passes until every order is settled (at most five per host), one process a
    /// host, against one `--serve-stores` child.
    private func drain(tag: String, hosts: Int, postgres: String? = nil) throws -> (passes: [PassResult], counts: GroupCounts?) {
        let ledger = try folder.dueLedger(name: "settle-\(tag)", orders: orders)
        var arguments = RateLimitedStores.Arguments()
        arguments.storeKitKey = folder.path + "/appstore-key.p8"
        arguments.playKey = try RateRows(options: options, bench: bench, folder: folder).playKey()
        arguments.receiptOrders = orders
        arguments.verifyReceiptRate = rate
        arguments.now = Int64(Date().timeIntervalSince1970)
        // The Server API and Play are not called; their limit is only the fake's default.
        arguments.rate = rate
        let stores = try RateLimitedStoresProcess(bench: bench, arguments: arguments)
        var results: [PassResult] = []
        do {
            var ledgerURL = ledger
            var cleanup: () -> Void = {}
            if let postgres { (ledgerURL, cleanup) = try RateRows.moveToPostgres(ledger, url: postgres, schema: "bench_learned_\(getpid())") }
            defer { cleanup() }
            let config = try configuration(name: "settle-\(tag)", ledger: ledgerURL, stores: stores)
            for _ in 0..<5 {
                let passes = try RateRows.passes(bench: bench, config: config, hosts: hosts, timeout: options.passTimeout)
                results += passes
                let finished = results.reduce(0) { $0 + $1.finished }
                if finished >= orders || passes.allSatisfy({ $0.finished == 0 }) { break }
            }
        } catch {
            _ = try? stores.stop()
            throw error
        }
        let record = try stores.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: ledger + suffix) }
        return (results, record.apple["verify_receipt"])
    }

    private func configuration(name: String, ledger: String, stores: RateLimitedStoresProcess) throws -> String {
        let config = JSONValue.object([
            ("ledger", .string(ledger)), ("bundle_id", .string(BenchOrders.bundleId)),
            ("receipt_api", .object([("production_url", .string(stores.receiptURL)), ("sandbox_url", .string(stores.receiptSandboxURL)),
                                     ("shared_secret_file", .string("secret"))])),
            ("products", .object([(BenchOrders.productId, .object([("type", .string("consumable"))]))])),
            ("user_binding", .object([("unsigned_proofs", .string("trust"))])),
            ("delivery", .object([("webhook", .object([("url", .string(stores.webhookURL)), ("secret_file", .string("webhook-secret"))]))])),
            ("schedule", .object([("concurrency", .number(options.concurrency))])),
        ])
        try folder.write("\(name).json", config.serialized(), mode: 0o644)
        return folder.path + "/\(name).json"
    }
}
