// settle-bench: one reconcile pass over N orders against the local Apple simulator, with a
// real hook process per order and a real SQLite ledger, then a status query. Prints numbers;
// asserts nothing. Usage: settle-bench [--orders N] [--concurrency C] [--apple-latency-ms M]
import Foundation
import SettleCore

var orders = 500, concurrency = 8, latencyMs = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let flag = arguments.next() {
    guard let value = arguments.next().flatMap(Int.init) else { fatalError("usage: settle-bench [--orders N] [--concurrency C] [--apple-latency-ms M]") }
    switch flag {
    case "--orders": orders = value
    case "--concurrency": concurrency = value
    case "--apple-latency-ms": latencyMs = value
    default: fatalError("unknown option \(flag)")
    }
}

func seconds(_ start: DispatchTime) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }

let folder = NSTemporaryDirectory() + "settle-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: folder) }
let secret = "bench-secret"
let simulator = try AppleSimulator(sharedSecret: secret)
_ = FileManager.default.createFile(atPath: folder + "/secret", contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600])
// The StoreKit 2 root settle requires next to its configuration (the simulator's, as in the demo).
_ = FileManager.default.createFile(atPath: folder + "/AppleRootCA-G3.pem", contents: Data(SimulatorSigningChain.rootPEM.utf8))
_ = FileManager.default.createFile(atPath: folder + "/hook.sh", contents: Data("#!/bin/sh\ncat > /dev/null\n".utf8),
                               attributes: [.posixPermissions: 0o755])
let config = JSONValue.object([
    ("ledger", .string(folder + "/ledger.sqlite3")), ("bundle_id", .string("com.example.bench")),
    ("receipt_api", .object([("production_url", .string(simulator.productionURL)), ("sandbox_url", .string(simulator.sandboxURL)),
                             ("shared_secret_file", .string("secret"))])),
    ("products", .object([("coins", .object([("type", .string("consumable"))]))])),
    ("delivery", .object([("command", .array([.string(folder + "/hook.sh")]))])),
    ("schedule", .object([("concurrency", .number(concurrency))])),
])
_ = FileManager.default.createFile(atPath: folder + "/settle.json", contents: config.data)
let configuration = try Configuration.load(path: folder + "/settle.json", environment: [:])
let ledger = try Ledger(path: configuration.ledgerPath)

var start = DispatchTime.now()
for i in 0..<orders {
    let receipt = Data("bench receipt \(i)".utf8).base64EncodedString()
    let answers: [SimulatedAnswer] = latencyMs > 0 ? [.slow(seconds: Double(latencyMs) / 1000)] : []
    simulator.script(receipt, ReceiptScript(receipt: SimulatedReceipt(bundleId: "com.example.bench", inApp: [
        SimulatedTransaction(productId: "coins", transactionId: String(3_000_000_000 + i))]), answers: answers))
    _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-\(i % 97)", productId: "coins",
                                    transactionId: String(3_000_000_000 + i), receipt: receipt))
}
let enqueueSeconds = seconds(start)

let reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: ProcessInfo.processInfo.environment, log: .silent)
start = DispatchTime.now()
let report = try reconciler.runPass()
let passSeconds = seconds(start)

start = DispatchTime.now()
let summary = try Ledger(readOnlyPath: configuration.ledgerPath).summary(OrderFilter(userId: "u-5", limit: 50))
let statusMs = seconds(start) * 1000

var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
print("orders \(orders), concurrency \(concurrency), simulated Apple latency \(latencyMs) ms")
print(String(format: "enqueue: %.2f s (%.0f orders/s)", enqueueSeconds, Double(orders) / enqueueSeconds))
print(String(format: "reconcile pass: %.2f s (%.0f orders/s): %@", passSeconds, Double(orders) / passSeconds, report.summaryLine))
print("apple requests: \(simulator.requests.count), peak concurrent: \(simulator.peakConcurrentRequests)")
print(String(format: "status query (user filter, %d rows): %.1f ms", summary.orders.count, statusMs))
print("peak RSS: \(usage.ru_maxrss / 1024) MiB")
