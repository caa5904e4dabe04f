import Foundation
import SettleApp
import SettleBase
import SettleAppStoreSimulator

/// The orders every benchmark ledger holds: order i pays for one "coins" with transaction
/// 3,000,000,000 + i in the receipt "bench receipt i" (base64).
enum BenchOrders {
    static let bundleId = "com.example.bench"
    static let productId = "coins"
    static let sharedSecret = "bench-secret"
    static let webhookSecret = "bench-webhook-secret"
    static let issuerId = "bench-issuer"
    static let keyId = "BENCHKEY01"

    static func receipt(_ index: Int) -> String { Data("bench receipt \(index)".utf8).base64EncodedString() }
    static func transactionId(_ index: Int) -> String { String(3_000_000_000 + index) }
}

/// `settle-bench --serve-apple`: the fake Apple (the simulator, answering every
/// verifyReceipt after `latencyMs`) and a webhook receiver, in a process of their own so
/// that their CPU is never counted as settle's. Prints its URLs as one JSON line, then
/// serves until its standard input closes (the parent exits or is done) or `maxLifetime`.
enum FakeAppleServer {
    static let maxLifetime: Double = 4 * 3600

    /// `storeKitKey`: the App Store Connect key settle signs Server API tokens with (PEM);
    /// its public half is what the simulator checks them against.
    static func serve(orders: Int, latencyMs: Int, storeKitKey: String) throws -> Never {
        let key = try ES256PrivateKey(pem: String(contentsOfFile: storeKitKey, encoding: .utf8))
        let simulator = try AppleSimulator(sharedSecret: BenchOrders.sharedSecret, credentials: ServerAPICredentials(
            issuerId: BenchOrders.issuerId, keyId: BenchOrders.keyId, bundleId: BenchOrders.bundleId, publicKey: key.publicKey))
        let answers: [SimulatedAnswer] = latencyMs > 0 ? [.slow(seconds: Double(latencyMs) / 1000)] : []
        for index in 0..<orders {
            simulator.script(BenchOrders.receipt(index), ReceiptScript(receipt: SimulatedReceipt(bundleId: BenchOrders.bundleId, inApp: [
                SimulatedTransaction(productId: BenchOrders.productId, transactionId: BenchOrders.transactionId(index))]),
                answers: answers))
            // The same purchase as a StoreKit 2 transaction, for orders that carry only its id.
            simulator.script(transaction: BenchOrders.transactionId(index), TransactionScript(transaction: SimulatedSignedTransaction(
                transactionId: BenchOrders.transactionId(index), productId: BenchOrders.productId, bundleId: BenchOrders.bundleId)))
        }
        // A receiver that grants everything at once, so the bound N·L/C stays Apple's alone; it
        // confirms each grant by naming its key, as settle requires of a webhook.
        // (`granted`: `idempotency_key` alone echoes what settle sent and confirms nothing).
        let webhook = try LoopbackHTTPServer { request in
            let key = request.header("Idempotency-Key") ?? ""
            return .json(200, JSONValue.object([("idempotency_key", .string(key)), ("granted", .string(key))]).data)
        }
        let line = JSONValue.object([("apple", .string(simulator.productionURL)), ("sandbox", .string(simulator.sandboxURL)),
                                     ("webhook", .string(webhook.baseURL + "/grant")),
                                     ("server", .string(simulator.serverProductionURL)),
                                     ("serverSandbox", .string(simulator.serverSandboxURL))])
        print(line.serialized())
        fflush(nil)
        let closed = DispatchSemaphore(value: 0)
        Thread {
            _ = FileHandle.standardInput.readDataToEndOfFile()
            closed.signal()
        }.start()
        _ = closed.wait(timeout: .now() + maxLifetime)
        // The parent reads this last line when it stops us.
        // Finish Transaction calls, and those the simulator answered 200 (a scripted production
        // transaction and a good token; any other gets a 401 or Apple's 404).
        let finishes = simulator.finishRequests
        let answered = finishes.filter { f in
            f.environment == .production && f.tokenProblem == nil
                && Int64(f.transactionId).map { $0 >= 3_000_000_000 && $0 < 3_000_000_000 + Int64(orders) } == true
        }
        print(JSONValue.object([("connections", .number(simulator.acceptedConnections)),
                                ("requests", .number(simulator.requests.count + simulator.serverRequests.count)),
                                ("finishes", .number(finishes.count)), ("finishes_ok", .number(answered.count))]).serialized())
        fflush(nil)
        simulator.stop()
        webhook.stop()
        exit(0)
    }
}

/// The parent's handle on a running `--serve-apple` process.
final class FakeAppleProcess {
    let appleURL: String
    let sandboxURL: String
    let webhookURL: String
    /// The simulated App Store Server API.
    let serverURL: String
    let serverSandboxURL: String
    /// Finish Transaction calls the last run saw, and those answered 200 (set by `stop()`).
    private(set) var finishes = (sent: 0, ok: 0)
    private let process: Process
    private let input: Pipe
    private let output: Pipe

    init(bench: String, folder: BenchFolder, orders: Int, latencyMs: Int) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: bench)
        process.arguments = ["--serve-apple", "--orders", String(orders), "--apple-latency-ms", String(latencyMs),
                             "--storekit-key", folder.path + "/appstore-key.p8"]
        input = Pipe()
        output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // The first line is the URLs; scripting 100k receipts takes a moment.
        let line = try ChildProcess.lastJSON(try ChildProcess.firstLine(of: output, within: 120, what: "the fake Apple process"))
        appleURL = line.string("apple")
        sandboxURL = line.string("sandbox")
        webhookURL = line.string("webhook")
        serverURL = line.string("server")
        serverSandboxURL = line.string("serverSandbox")
    }

    /// Stops the process and returns how many connections clients opened to Apple and how
    /// many requests they sent (its CPU is of no interest).
    @discardableResult
    func stop() -> (connections: Int, requests: Int) {
        try? input.fileHandleForWriting.close()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let line = try? ChildProcess.lastJSON(String(decoding: rest, as: UTF8.self)) else { return (0, 0) }
        finishes = (line.int("finishes"), line.int("finishes_ok"))
        return (line.int("connections"), line.int("requests"))
    }
}
