// settle-notify-bench: how many App Store Server Notifications per second the endpoint takes
// (verify the JWS chain and signature, store durably, answer 200) while reconcile passes run
// and deliver the orders they create. Real libmicrohttpd endpoint on loopback, real SQLite
// ledger (synchronous = FULL), real hook processes. Prints numbers; asserts nothing.
// Usage: settle-notify-bench [--notifications N] [--clients C] [--max-seconds S]
import Foundation
import SettleApp
import Synchronization
import SettleBase
import SettleConfig
import SettleLedger
import SettleEngine
import SettleAppStoreSimulator

var count = 2000, clients = 8, maxSeconds = 60
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let flag = arguments.next() {
    guard let value = arguments.next().flatMap(Int.init), value > 0 else {
        fatalError("usage: settle-notify-bench [--notifications N] [--clients C] [--max-seconds S]")
    }
    switch flag {
    case "--notifications": count = value
    case "--clients": clients = value
    case "--max-seconds": maxSeconds = value
    default: fatalError("unknown option \(flag)")
    }
}

func seconds(_ start: DispatchTime) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }

let folder = NSTemporaryDirectory() + "settle-notify-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: folder) }
let bundleId = "com.example.bench"
let keyPEM = try ES256PrivateKey.generatePEM()
let simulator = try AppleSimulator(sharedSecret: "unused", credentials: ServerAPICredentials(
    issuerId: "bench", keyId: "BENCHKEY01", bundleId: bundleId, publicKey: try ES256PrivateKey(pem: keyPEM).publicKey))
_ = FileManager.default.createFile(atPath: folder + "/key.p8", contents: Data(keyPEM.utf8), attributes: [.posixPermissions: 0o600])
_ = FileManager.default.createFile(atPath: folder + "/root.pem", contents: Data(SimulatorSigningChain.rootPEM.utf8))
_ = FileManager.default.createFile(atPath: folder + "/hook.sh", contents: Data("#!/bin/sh\ncat > /dev/null\n".utf8),
                                   attributes: [.posixPermissions: 0o755])
let config = JSONValue.object([
    ("ledger", .string(folder + "/ledger.sqlite3")), ("bundle_id", .string(bundleId)),
    ("server_api", .object([("production_url", .string(simulator.serverProductionURL)), ("sandbox_url", .string(simulator.serverSandboxURL)),
                            ("issuer_id", .string("bench")), ("key_id", .string("BENCHKEY01")), ("private_key_file", .string("key.p8")),
                            ("root_certificates", .array([.string("root.pem")])), ("receipt_root_certificates", .array([.string("root.pem")]))])),
    ("products", .object([("coins", .object([("type", .string("consumable"))]))])),
    ("delivery", .object([("command", .array([.string(folder + "/hook.sh")]))])),
    ("user_binding", .object([("app_account_token", .string("user_id"))])),
    ("notifications", .object([("listen", .string("127.0.0.1:0")), ("max_connections", .number(clients * 2))])),
])
_ = FileManager.default.createFile(atPath: folder + "/settle.json", contents: config.data)
// The stores, as `settle` registers them: their configuration sections are theirs to decode.
StoreModules.all.register()
let configuration = try Configuration.load(path: folder + "/settle.json", environment: [:])
let ledger = try SQLiteLedger(path: configuration.ledgerPath)
let reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: ProcessInfo.processInfo.environment, log: .silent, modules: StoreModules.all)
let inbox = reconciler.inbox!

// Signed up front, so the clock measures settle, not the simulator's signing.
var start = DispatchTime.now()
let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
var bodies: [Data] = []
for i in 0..<count {
    let transaction = SimulatedSignedTransaction(transactionId: String(5_000_000_000 + i), productId: "coins", bundleId: bundleId,
                                                 purchaseDateMs: nowMs - 60_000, appAccountToken: UUID().uuidString.lowercased())
    simulator.script(transaction: transaction.transactionId, TransactionScript(transaction: transaction))
    let signed = try SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: transaction, bundleId: bundleId, signedDateMs: nowMs).signed()
    bodies.append(JSONValue.object([("signedPayload", .string(signed))]).data)
}
let signSeconds = seconds(start)

let endpoint = try NotificationEndpoint(address: "127.0.0.1:0", path: "/apple/notifications/v2",
                                        limits: configuration.notifications!.limits, log: .silent) { inbox.answer($0).response }
let url = "http://127.0.0.1:\(endpoint.port)/apple/notifications/v2"

// Reconcile passes run all along, delivering the orders the notifications create.
let posting = Atomic<Bool>(true)
let passes = Atomic<Int>(0)
let passThread = Thread {
    while posting.load(ordering: .relaxed) {
        _ = try? reconciler.runPass()
        passes.add(1, ordering: .relaxed)
    }
}
passThread.start()

let next = Atomic<Int>(0), answered = Atomic<Int>(0), failed = Atomic<Int>(0)
let deadline = DispatchTime.now() + .seconds(maxSeconds)
let group = DispatchGroup()
let shared = bodies
start = DispatchTime.now()
for _ in 0..<clients {
    group.enter()
    Thread {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, totalTimeout: 30))
        while DispatchTime.now() < deadline {
            let i = next.add(1, ordering: .relaxed).oldValue
            guard i < shared.count else { break }
            let request = HTTPRequest(method: "POST", url: url, headers: [HTTPHeader("Content-Type", "application/json")], body: shared[i])
            if (try? client.send(request))?.status == 200 { answered.add(1, ordering: .relaxed) } else { failed.add(1, ordering: .relaxed) }
        }
        group.leave()
    }.start()
}
group.wait()
let postSeconds = seconds(start)
posting.store(false, ordering: .relaxed)
while passThread.isExecuting { usleep(10_000) }
let drain = DispatchTime.now()
let last = try reconciler.runPass()
let drainSeconds = seconds(drain)
endpoint.stop()
let summary = try ledger.summary(OrderFilter(limit: 0))

var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
print("notifications \(count), clients \(clients), cap \(maxSeconds) s; signing them took \(String(format: "%.1f", signSeconds)) s (not counted)")
print(String(format: "endpoint: %d answered 200, %d failed in %.2f s: %.0f notifications/s while %d reconcile passes ran",
             answered.load(ordering: .relaxed), failed.load(ordering: .relaxed), postSeconds,
             Double(answered.load(ordering: .relaxed)) / postSeconds, passes.load(ordering: .relaxed)))
print(String(format: "final pass: %.2f s: %@", drainSeconds, last.summaryLine))
print("orders finished \(summary.counts[.finished] ?? 0), pending \(summary.counts[.pending] ?? 0), needs attention \(summary.counts[.needsAttention] ?? 0)")
print("peak RSS: \(usage.ru_maxrss / 1024) MiB")
