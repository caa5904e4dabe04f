import Foundation

/// `--rows instructions`: instructions settle executes per settled order, counted by valgrind's
/// callgrind. Seconds of CPU spread by ±20 % from run to run on a shared 2-core machine;
/// instructions by a few per cent (what varies is how many orders share each commit, and with it
/// the pages written an order), so this is the row to compare two builds by. Two passes: the 1 k pass of the pass rows (hook
/// `/bin/true`, Apple at 0 ms) and the webhook network row at the same size. Each pass runs about
/// fifty times slower under valgrind, which also serializes its threads, so only the count is
/// printed. Needs `valgrind` on PATH (Debian's package); without it the row says so.
struct InstructionRows {
    let options: BenchOptions
    let runner: PassRunner
    let bench: String

    func run(_ emit: (String) -> Void) throws {
        let size = options.passSizes.first ?? 1_000
        emit("\n-- instructions per settled order (valgrind --tool=callgrind; holds where seconds do not), \(size) due orders, concurrency \(options.concurrency)")
        emit(BenchReport.columns("pass", "settle", "", ""))
        guard let valgrind = Self.onPath("valgrind") else {
            emit("  valgrind is not installed (apt-get install valgrind): no instruction counts")
            return
        }
        let cases: [(String, Int, BenchFolder.Delivery)] = [
            ("hook /bin/true, Apple at 0 ms", 0, .command(["/bin/true"])),
            ("webhook, Apple at \(options.latencyMs) ms", options.latencyMs, .webhook("")),
        ]
        for (name, latency, delivery) in cases {
            let output = runner.folder.path + "/callgrind-\(UUID().uuidString)"
            let profiler = [valgrind, "--tool=callgrind", "--callgrind-out-file=\(output).%p"]
            let apple = try FakeAppleProcess(bench: bench, folder: runner.folder, orders: size, latencyMs: latency)
            let result: PassResult
            do {
                var resolved = delivery
                if case .webhook = delivery { resolved = .webhook(apple.webhookURL) }
                result = try runner.settle(orders: size, apple: apple, delivery: resolved, concurrency: options.concurrency,
                                           tag: "instructions", profiler: profiler)
            } catch {
                apple.stop()
                throw error
            }
            apple.stop()
            let instructions = try Self.totalInstructions(prefix: output)
            let perOrder = Double(instructions) / Double(max(result.finished, 1))
            emit(BenchReport.columns(name, String(format: "%.3f M an order (%.3f G for %d settled)", perOrder / 1e6,
                                                  Double(instructions) / 1e9, result.finished), "", ""))
        }
    }

    /// The instructions in callgrind's output files `prefix.<pid>` (one: hooks run untraced).
    static func totalInstructions(prefix: String) throws -> Int {
        let folder = URL(fileURLWithPath: prefix).deletingLastPathComponent().path
        let stem = URL(fileURLWithPath: prefix).lastPathComponent + "."
        var total = 0
        var found = false
        for file in try FileManager.default.contentsOfDirectory(atPath: folder) where file.hasPrefix(stem) {
            let text = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            // "summary: N" (or "totals: N") is callgrind's count of the whole run.
            for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
                if let count = Int(line.split(separator: " ").last ?? "") { total += count; found = true; break }
            }
            try? FileManager.default.removeItem(atPath: folder + "/" + file)
        }
        guard found else { throw BenchError("callgrind wrote no count under \(prefix)") }
        return total
    }

    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
