import Foundation
import SettleBase

/// `settle web` on a big ledger (issue 26: every page under 100 ms on a 1 M-order ledger): the
/// release binary serves the status ledger read-only on loopback, and each page is fetched over
/// HTTP through libcurl as a browser would, timed from request to last byte: the first fetch of
/// each page (the ledger's pages still cold in the console's process), then the median of five.
struct WebBench {
    let settle: String
    let folder: BenchFolder

    struct Page {
        var name: String
        var path: String
    }

    struct Timing {
        var page: Page
        var firstMs: Double
        var medianMs: Double
        var bytes: Int
    }

    /// Each page on the SQLite ledger, and on the same ledger moved to PostgreSQL when
    /// `postgres` (a server URL) is given.
    func run(orders: Int, postgres: String?) throws -> (sqlite: [Timing], postgres: [Timing]?) {
        let ledger = try folder.statusLedger(orders: orders)
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: ledger + suffix) } }
        let sqlite = try pages(ledger: ledger, orders: orders)
        guard let postgres else { return (sqlite, nil) }
        let (url, drop) = try RateRows.moveToPostgres(ledger, url: postgres, schema: "bench_web_\(getpid())")
        defer { drop() }
        return (sqlite, try pages(ledger: url, orders: orders))
    }

    func pages(ledger: String, orders: Int) throws -> [Timing] {
        let config = try folder.configuration(name: "web", ledger: ledger, apple: nil, delivery: .command(["/bin/true"]),
                                              concurrency: 8)
        let server = try WebProcess(settle: settle, config: config)
        defer { server.stop() }
        let middle = orders / 2 + 1  // finished (i % 100 < 94)
        let pages = [
            Page(name: "overview", path: "/"),
            Page(name: "search by user", path: "/search?q=u-123"),
            Page(name: "search by transaction", path: "/search?q=\(3_000_000_000 + middle)"),
            Page(name: "search by order id", path: "/search?q=o-\(middle)"),
            Page(name: "order page", path: "/orders/o-\(middle)"),
            Page(name: "needs_attention orders (api)", path: "/api/status?state=needs_attention"),
            Page(name: "/api/status", path: "/api/status"),
            Page(name: "/api/orders/ID", path: "/api/orders/o-\(middle)"),
        ]
        let client = HTTPClient()
        return try pages.map { page in
            var samples: [Double] = []
            var bytes = 0
            for _ in 0..<6 {
                let start = DispatchTime.now()
                let response = try client.send(HTTPRequest(method: "GET", url: server.baseURL + page.path))
                samples.append(seconds(since: start) * 1000)
                guard response.status == 200 else {
                    throw BenchError("settle web \(page.path) answered \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))")
                }
                bytes = response.body.count
            }
            return Timing(page: page, firstMs: samples[0], medianMs: median(Array(samples.dropFirst())), bytes: bytes)
        }
    }
}

/// A running `settle web --listen 127.0.0.1:0`, its address read from the line it prints.
final class WebProcess {
    let baseURL: String
    private let process: Process

    init(settle: String, config: String) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: settle)
        process.arguments = ["web", "--config", config, "--listen", "127.0.0.1:0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = try ChildProcess.firstLine(of: output, within: 60, what: "settle web")
        guard let start = line.range(of: "http://"), let end = line[start.upperBound...].firstIndex(of: "/") else {
            throw BenchError("settle web printed no address: \(line)")
        }
        baseURL = String(line[start.lowerBound..<end])
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
