// settle-bench: the project's benchmark (issue 11). Prints every row of the performance
// table for settle, side by side with a hand-written Python reconciler where the issue
// compares them: wall / bound with a command hook and a webhook, settle's own CPU per
// order, pass time by backlog size, JWS verifications per CPU-second against Apple's
// Python library, `settle status` on a big ledger, and peak RSS. See BenchOptions.usage;
// scripts/bench.sh builds and runs it.
import Foundation

do {
    let options = try BenchOptions(Array(CommandLine.arguments.dropFirst()))
    switch options.mode {
    case .serveApple: try FakeAppleServer.serve(orders: options.orders, latencyMs: options.latencyMs, storeKitKey: options.storeKitKey)
    case let .runPass(config): try PassChild.run(configurationPath: config, daemons: options.passDaemons)
    case let .serveStores(arguments): try RateLimitedStores.serve(arguments)
    case .report:
        var report = BenchReport(options: options)
        try report.run()
    }
} catch {
    FileHandle.standardError.write(Data("settle-bench: \(error)\n".utf8))
    exit(1)
}
