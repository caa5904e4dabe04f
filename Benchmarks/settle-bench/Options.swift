import Foundation

/// What to run. Defaults are the issue 11 table; `--quick` is a short subset for development
/// (smaller N and ledgers, shorter JWS runs), and each size can be set on its own.
struct BenchOptions {
    enum Mode {
        case report
        case serveApple
        case runPass(String)
        /// The rate-limited fake stores of the rate rows (`RateLimitedStores`), with their own arguments.
        case serveStores([String])
    }

    var mode = Mode.report
    var quick = false
    var orders = 5_000
    var concurrency = 32
    var latencyMs = 50
    var passSizes = [1_000, 10_000, 100_000]
    var statusOrders = 1_000_000
    var jwsSeconds = 2.0
    var rows: Set<String> = BenchOptions.allRows
    var python = true
    var passTimeout = 1_800.0
    var fixtures = "Tests/SettleCoreTests/Fixtures/apple"
    var pythonDirectory = "Benchmarks/python-reconciler"
    /// Runs settle's passes under this command (e.g. "valgrind --tool=callgrind"), to profile them.
    var passWrapper: [String] = []
    /// For --serve-apple: the key settle signs Server API tokens with.
    var storeKitKey = ""
    /// The rate rows: the backlog's size and the stores' limit, requests a second per endpoint group.
    var rateOrders = 20_000
    /// `--run-pass` as one of this many daemons on one PostgreSQL ledger (`--as-one-of-daemons N`):
    /// registered as `settle run` registers, the pass begins once all N are (0: a one-shot pass).
    var passDaemons = 0
    var rateLimit = 200

    static let allRows: Set<String> = ["network", "durability", "postgres", "pass", "instructions", "jws", "status", "web", "rate", "finish", "learned", "pgstatus", "spawn"]

    static let usage = """
    usage: settle-bench [--quick] [--orders N] [--concurrency C] [--apple-latency-ms L]
                        [--pass-sizes N,N,...] [--status-orders N] [--jws-seconds S]
                        [--rows network,durability,postgres,pass,instructions,jws,status,web,rate,finish,learned,pgstatus,spawn] [--no-python] [--pass-timeout S]
                        [--fixtures DIR] [--python-dir DIR] [--pass-wrapper "valgrind --tool=callgrind"]
                        [--rate-orders N] [--rate-limit R]
    """

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let value = iterator.next() else { throw BenchError("\(flag) needs a value\n\(Self.usage)") }
            return value
        }
        func number(_ flag: String) throws -> Int {
            guard let number = Int(try value(flag)), number > 0 else { throw BenchError("\(flag) needs a positive number") }
            return number
        }
        var explicit: Set<String> = []
        while let flag = iterator.next() {
            explicit.insert(flag)
            switch flag {
            case "--serve-apple": mode = .serveApple
            case "--serve-stores":
                var rest: [String] = []
                while let argument = iterator.next() { rest.append(argument) }
                mode = .serveStores(rest)
            case "--rate-orders": rateOrders = try number(flag)
            case "--rate-limit": rateLimit = try number(flag)
            case "--run-pass": mode = .runPass(try value(flag))
            case "--as-one-of-daemons": passDaemons = try number(flag)
            case "--quick": quick = true
            case "--orders": orders = try number(flag)
            case "--concurrency": concurrency = try number(flag)
            case "--apple-latency-ms":
                guard let number = Int(try value(flag)), number >= 0 else { throw BenchError("--apple-latency-ms needs a number") }
                latencyMs = number
            case "--pass-sizes":
                passSizes = try value(flag).split(separator: ",").map {
                    guard let size = Int($0), size > 0 else { throw BenchError("--pass-sizes needs numbers") }
                    return size
                }
            case "--status-orders": statusOrders = try number(flag)
            case "--jws-seconds":
                guard let number = Double(try value(flag)), number > 0 else { throw BenchError("--jws-seconds needs seconds") }
                jwsSeconds = number
            case "--rows":
                rows = Set(try value(flag).split(separator: ",").map(String.init))
                guard rows.isSubset(of: Self.allRows) else { throw BenchError("--rows takes \(Self.allRows.sorted())") }
            case "--no-python": python = false
            case "--pass-timeout": passTimeout = Double(try number(flag))
            case "--fixtures": fixtures = try value(flag)
            case "--python-dir": pythonDirectory = try value(flag)
            case "--storekit-key": storeKitKey = try value(flag)
            case "--pass-wrapper": passWrapper = try value(flag).split(separator: " ").map(String.init)
            default: throw BenchError("unknown option \(flag)\n\(Self.usage)")
            }
        }
        if quick {
            if !explicit.contains("--orders") { orders = 1_000 }
            if !explicit.contains("--pass-sizes") { passSizes = [1_000, 3_000] }
            if !explicit.contains("--status-orders") { statusOrders = 100_000 }
            if !explicit.contains("--jws-seconds") { jwsSeconds = 0.5 }
            if !explicit.contains("--rate-orders") { rateOrders = 2_000 }
        }
    }
}
