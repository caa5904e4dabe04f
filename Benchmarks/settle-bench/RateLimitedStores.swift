import Foundation
import SettleApp
import SettleBase
import SettleGooglePlay
import SettleSimulator
import SettleAppStoreSimulator
import SettleGooglePlaySimulator

/// The orders of the rate-limit rows (issue 27): App Store orders carrying only a StoreKit 2
/// transaction id (each one Get Transaction Info, a paced Server API call) and Google Play
/// one-time purchases (calls in the one_time_purchases bucket).
/// The last `urgent` Play orders were bought more than two days ago, inside a day of Google's
/// three-day refund deadline, the very last one first: it is the one nearest its deadline, and
/// it sorts last by order id, so it can only settle first because settle puts it first.
enum RateOrders {
    static let playProduct = "gems"
    static let packageName = "com.example.bench"
    static let serviceAccountEmail = "settle-bench@example-project.iam.gserviceaccount.com"
    static let urgent = 10
    /// Refund requests (CONSUMPTION_REQUEST) waiting for an answer when the drain begins, and
    /// how many seconds into the drain Apple's 12-hour deadline for them falls.
    static let consumptionRequests = 100
    static let consumptionDeadlineSeconds: Int64 = 30

    /// A Play one-time purchase costs settle three calls of its bucket (productsv2, the
    /// purchase, consume; measured: the bench prints it), an App Store order one.
    static let playCallsPerOrder = 3

    /// Order ids interleave the stores (three App Store orders, then a Play order), as a backlog
    /// that built up during an outage of settle's would: both stores' orders are due at once
    /// and claimed side by side. (Ids grouped by store let one store's backlog, claimed first,
    /// hold the other's bucket idle until it is gone.)
    static func appleOrderId(_ index: Int) -> String { String(format: "o-%06d", index + index / playCallsPerOrder) }
    static func playOrderId(_ index: Int) -> String { String(format: "o-%06d", (playCallsPerOrder + 1) * index + playCallsPerOrder) }
    static func playToken(_ index: Int) -> String { "bench-play-token-\(index)-0123456789abcdef" }
    static func user(_ index: Int) -> String { "u-\(index % 97)" }
    static func appleTransactionId(_ index: Int) -> String { BenchOrders.transactionId(index) }

    /// When Play order `index` was bought (and enqueued), seconds since the epoch.
    static func playPurchased(_ index: Int, of count: Int, now: Int64) -> Int64 {
        let fromEnd = count - 1 - index
        guard fromEnd < urgent else { return now - 1 }
        // 2.5 days ago for the last, a minute later for each one before it.
        return now - 216_000 + Int64(fromEnd) * 60
    }
}

/// `settle-bench --serve-stores ...`: a rate-limited fake Apple (the simulator's Server API)
/// and fake Google Play, with a webhook receiver, in a process of their own so their CPU is
/// never settle's. Prints its URLs as one JSON line, serves until standard input closes, then
/// prints what each store's limit granted and refused (`SimulatedRateLimit.json`).
enum RateLimitedStores {
    struct Arguments {
        var storeKitKey = ""
        var playKey = ""
        var appleOrders = 0
        var playOrders = 0
        var now: Int64 = 0
        var rate = 200.0
        var appleOutage: Range<Double>?
        var playOutage: Range<Double>?
        /// Receipt orders (`BenchOrders.receipt`) verifyReceipt answers, and its own limit, one
        /// settle is not told and must learn (issue 38); nil: verifyReceipt unlimited.
        var receiptOrders = 0
        var verifyReceiptRate: Double?

        /// As `RateLimitedStoresProcess` passes them.
        var argv: [String] {
            var list = ["--storekit-key", storeKitKey, "--play-key", playKey, "--apple-orders", String(appleOrders),
                        "--play-orders", String(playOrders), "--now", String(now), "--rate", String(rate)]
            if let appleOutage { list += ["--apple-outage", "\(appleOutage.lowerBound):\(appleOutage.upperBound)"] }
            if let playOutage { list += ["--play-outage", "\(playOutage.lowerBound):\(playOutage.upperBound)"] }
            if receiptOrders > 0 { list += ["--receipt-orders", String(receiptOrders)] }
            if let verifyReceiptRate { list += ["--verify-receipt-rate", String(verifyReceiptRate)] }
            return list
        }

        init() {}

        init(_ argv: [String]) throws {
            var iterator = argv.makeIterator()
            func value(_ flag: String) throws -> String {
                guard let value = iterator.next() else { throw BenchError("--serve-stores: \(flag) needs a value") }
                return value
            }
            func window(_ flag: String) throws -> Range<Double> {
                let parts = try value(flag).split(separator: ":").compactMap { Double($0) }
                guard parts.count == 2, parts[0] < parts[1] else { throw BenchError("--serve-stores: \(flag) takes FROM:TO seconds") }
                return parts[0]..<parts[1]
            }
            while let flag = iterator.next() {
                switch flag {
                case "--storekit-key": storeKitKey = try value(flag)
                case "--play-key": playKey = try value(flag)
                case "--apple-orders": appleOrders = Int(try value(flag)) ?? 0
                case "--play-orders": playOrders = Int(try value(flag)) ?? 0
                case "--now": now = Int64(try value(flag)) ?? 0
                case "--rate": rate = Double(try value(flag)) ?? 0
                case "--apple-outage": appleOutage = try window(flag)
                case "--play-outage": playOutage = try window(flag)
                case "--receipt-orders": receiptOrders = Int(try value(flag)) ?? 0
                case "--verify-receipt-rate": verifyReceiptRate = Double(try value(flag))
                default: throw BenchError("--serve-stores: unknown option \(flag)")
                }
            }
            guard rate > 0 else { throw BenchError("--serve-stores: --rate needs a positive number") }
        }
    }

    static func serve(_ argv: [String]) throws -> Never {
        let arguments = try Arguments(argv)
        let time = SystemTimeSource()
        let key = try ES256PrivateKey(pem: String(contentsOfFile: arguments.storeKitKey, encoding: .utf8))
        let apple = try AppleSimulator(sharedSecret: BenchOrders.sharedSecret, credentials: ServerAPICredentials(
            issuerId: BenchOrders.issuerId, keyId: BenchOrders.keyId, bundleId: BenchOrders.bundleId, publicKey: key.publicKey))
        for index in 0..<arguments.appleOrders {
            let id = RateOrders.appleTransactionId(index)
            apple.script(transaction: id, TransactionScript(transaction: SimulatedSignedTransaction(
                transactionId: id, productId: BenchOrders.productId, bundleId: BenchOrders.bundleId)))
        }
        for index in 0..<arguments.receiptOrders {
            apple.script(BenchOrders.receipt(index), ReceiptScript(receipt: SimulatedReceipt(bundleId: BenchOrders.bundleId, inApp: [
                SimulatedTransaction(productId: BenchOrders.productId, transactionId: BenchOrders.transactionId(index))])))
        }
        let verifyReceipt = arguments.verifyReceiptRate.map { ["verify_receipt": $0] } ?? [:]
        let appleLimit = SimulatedRateLimit(rate: arguments.rate, groupRates: verifyReceipt, outage: arguments.appleOutage, time: time)
        apple.limit(appleLimit)

        let account = try ServiceAccountKey(json: Data(contentsOf: URL(fileURLWithPath: arguments.playKey)))
        let google = FakeGooglePlay(packageName: RateOrders.packageName, serviceAccount: account,
                                    pushKey: try RSAPrivateKey(pem: RSAPrivateKey.generatePEM()), time: time)
        for index in 0..<arguments.playOrders {
            let bought = RateOrders.playPurchased(index, of: arguments.playOrders, now: arguments.now)
            google.script(product: RateOrders.playToken(index), ProductPurchase(
                rawPurchaseState: 0, rawAcknowledgementState: 0, orderId: "GPA.\(3300 + index % 1000)-\(index)",
                productId: RateOrders.playProduct, purchaseTimeMillis: bought * 1000,
                obfuscatedExternalAccountId: RateOrders.user(index)))
        }
        let googleLimit = SimulatedRateLimit(rate: arguments.rate, outage: arguments.playOutage, time: time)
        google.limit(googleLimit)
        let googleServer = try LoopbackHTTPServer { google.handle($0) }
        google.expectTokenURL(googleServer.baseURL + "/token")

        // Confirms each grant by naming its key (`granted`), as settle requires of a webhook.
        let webhook = try LoopbackHTTPServer { request in
            let key = request.header("Idempotency-Key") ?? ""
            return .json(200, JSONValue.object([("idempotency_key", .string(key)), ("granted", .string(key))]).data)
        }
        print(JSONValue.object([("server", .string(apple.serverProductionURL)), ("serverSandbox", .string(apple.serverSandboxURL)),
                                ("receipt", .string(apple.productionURL)), ("receiptSandbox", .string(apple.sandboxURL)),
                                ("google", .string(googleServer.baseURL)), ("webhook", .string(webhook.baseURL + "/grant"))]).serialized())
        fflush(nil)
        _ = FileHandle.standardInput.readDataToEndOfFile()
        print(JSONValue.object([("apple", appleLimit.json), ("google", googleLimit.json),
                                ("finish_requests", .number(apple.finishRequests.count))]).serialized())
        fflush(nil)
        apple.stop()
        googleServer.stop()
        webhook.stop()
        exit(0)
    }
}

/// One group's record as read back from `--serve-stores`.
struct GroupCounts {
    var rate: Double
    var granted: Int
    var refused: Int
    var refusedAfterFirstSecond: Int
    var outage: Int
    var grantsPerSecond: [Int]
    var refusalsPerSecond: [Int]

    init(_ values: [String: Any]) {
        func int(_ key: String) -> Int { (values[key] as? NSNumber)?.intValue ?? 0 }
        func bins(_ key: String) -> [Int] { (values[key] as? [NSNumber])?.map(\.intValue) ?? [] }
        rate = (values["rate"] as? NSNumber)?.doubleValue ?? .nan
        granted = int("granted")
        refused = int("refused")
        refusedAfterFirstSecond = int("refused_after_first_second")
        outage = int("outage")
        grantsPerSecond = bins("grants_per_second")
        refusalsPerSecond = bins("refusals_per_second")
    }

    /// The seconds the drain ran: from the first second to the last that granted anything.
    var drainSeconds: Int { (grantsPerSecond.lastIndex { $0 > 0 } ?? -1) + 1 }

    /// Grants a second over the drain's whole seconds, leaving out its first (the start-up
    /// burst, one second's worth that both buckets begin full with) and its last (partial);
    /// a drain of under three seconds is taken whole.
    var steadyRate: Double { mean(grantsPerSecond, steadySeconds) }

    /// Requests sent a second (granted and refused) over the same seconds.
    var steadySentRate: Double { mean(grantsPerSecond, steadySeconds) + mean(refusalsPerSecond, steadySeconds) }

    private var steadySeconds: Range<Int> {
        let seconds = max(drainSeconds, refusalsPerSecond.count)
        return seconds >= 3 ? 1..<drainSeconds - 1 : 0..<max(1, seconds)
    }

    /// Grants a second over `seconds` (an outage window), clipped to the drain.
    func rate(over seconds: Range<Int>) -> Double { mean(grantsPerSecond, seconds) }

    private func mean(_ bins: [Int], _ range: Range<Int>) -> Double {
        guard !range.isEmpty else { return .nan }
        return Double(range.reduce(0) { $0 + ($1 < bins.count ? bins[$1] : 0) }) / Double(range.count)
    }
}

/// The parent's handle on a running `--serve-stores` process.
final class RateLimitedStoresProcess {
    let serverURL: String
    let serverSandboxURL: String
    let receiptURL: String
    let receiptSandboxURL: String
    let googleURL: String
    let webhookURL: String
    private let process: Process
    private let input: Pipe
    private let output: Pipe

    init(bench: String, arguments: RateLimitedStores.Arguments) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: bench)
        process.arguments = ["--serve-stores"] + arguments.argv
        input = Pipe()
        output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = try ChildProcess.lastJSON(try ChildProcess.firstLine(of: output, within: 120, what: "the rate-limited stores"))
        serverURL = line.string("server")
        serverSandboxURL = line.string("serverSandbox")
        receiptURL = line.string("receipt")
        receiptSandboxURL = line.string("receiptSandbox")
        googleURL = line.string("google")
        webhookURL = line.string("webhook")
    }

    struct Record {
        var apple: [String: GroupCounts]
        var google: [String: GroupCounts]
        var finishRequests: Int
    }

    /// Stops the process and returns what its limits counted.
    func stop() throws -> Record {
        try? input.fileHandleForWriting.close()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let line = try ChildProcess.lastJSON(String(decoding: rest, as: UTF8.self))
        func groups(_ store: String) -> [String: GroupCounts] {
            let groups = (line.values[store] as? [String: Any])?["groups"] as? [String: [String: Any]] ?? [:]
            return groups.mapValues(GroupCounts.init)
        }
        return Record(apple: groups("apple"), google: groups("google"), finishRequests: line.int("finish_requests"))
    }
}
