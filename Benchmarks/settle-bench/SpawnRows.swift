import Foundation
import SettleBase
import SettleDelivery

/// `--rows spawn`: settle's own CPU to start one per-order command hook and reap it, alone:
/// the floor the command hook row's own CPU stands on, whatever the rest of a pass costs.
/// The network rows' `hook.sh` with a hook payload of the usual size on stdin, from as many
/// threads as a pass has delivery workers; CPU is getrusage(RUSAGE_SELF), so the hook
/// processes themselves are not counted, as in the pass rows.
struct SpawnRows {
    let options: BenchOptions
    let folder: BenchFolder

    func run(_ emit: (String) -> Void) throws {
        let n = options.orders, c = options.concurrency
        let payload = Data(String(repeating: "x", count: 600).utf8)
        let environment = ["PATH": "/usr/bin:/bin", "SETTLE_ORDER_ID": "bench-order", "SETTLE_IDEMPOTENCY_KEY": "bench-key"]
        emit("\n-- the command hook's start and reap alone: \(n) runs of hook.sh from \(c) threads, settle's own CPU (hooks excluded)")
        for round in 1...3 {
            let failures = Atomic(0)
            let cpu = ownCPUSeconds(), switches = ownContextSwitches(), start = DispatchTime.now()
            DispatchQueue.concurrentPerform(iterations: c) { worker in
                var index = worker
                while index < n {
                    let result = try? Subprocess.run(arguments: [folder.path + "/hook.sh"], environment: environment,
                                                     standardInput: payload, timeout: 30)
                    if result?.termination != .exited(0) { failures.add(1) }
                    index += c
                }
            }
            let spent = ownCPUSeconds() - cpu, wall = seconds(since: start)
            let slept = Double(ownContextSwitches() - switches) / Double(n)
            guard failures.value == 0 else { throw BenchError("spawn row: \(failures.value) runs of hook.sh failed") }
            emit(String(format: "  round %d: own CPU per run %.3f ms, %.2f voluntary context switches a run (wall %.2f s, %.0f runs a second)",
                        round, spent * 1000 / Double(n), slept, wall, Double(n) / wall))
        }
    }
}

