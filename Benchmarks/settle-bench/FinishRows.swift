import Foundation

/// `--rows finish`: what Finish Transaction adds to a pass against the fake Apple. After each
/// pass settle tells Apple up to 100 delivered transactions are finished, paced at Apple's
/// published 50/s: a second or more of every pass, spent waiting for Apple's budget, not
/// working. The pass rows run with it off (`BenchFolder.finishTransactions`); this row is the
/// before/after.
struct FinishRows {
    let options: BenchOptions
    let runner: PassRunner
    let bench: String

    func run(_ emit: (String) -> Void) throws {
        let size = options.passSizes.first ?? 1_000
        emit("\n-- Finish Transaction after a pass of \(size) due orders, hook /bin/true, Apple at 0 ms, concurrency \(options.concurrency) (median of 3 each)")
        emit(RateRows.columns("server_api.finish_transactions", "pass wall", "settle CPU/order"))
        var walls: [Bool: Double] = [:]
        for finishing in [true, false] {
            var samples: [PassResult] = []
            var finishes = (sent: 0, ok: 0)
            for _ in 0..<3 {
                let apple = try FakeAppleProcess(bench: bench, folder: runner.folder, orders: size, latencyMs: 0)
                do {
                    samples.append(try runner.settle(orders: size, apple: apple, delivery: .command(["/bin/true"]),
                                                     concurrency: options.concurrency, tag: "finish", finishTransactions: finishing))
                } catch {
                    apple.stop()
                    throw error
                }
                apple.stop()
                finishes = apple.finishes
            }
            let wall = median(samples.map(\.wall)), cpu = median(samples.map(\.cpuPerOrderMs))
            walls[finishing] = wall
            emit(RateRows.columns(finishing ? "true (settle's default)" : "false (the pass rows)", String(format: "%.2f s", wall),
                                  String(format: "%.3f ms", cpu)))
            emit("  (\(samples.last?.summary ?? ""); Finish Transaction calls the fake Apple saw: \(finishes.sent), answered 200: \(finishes.ok))")
        }
        if let on = walls[true], let off = walls[false] {
            emit(String(format: "  Finish Transaction adds %.2f s to the pass (100 calls at Apple's 50/s with a burst of 50: about 1 s)", on - off))
        }
    }
}
