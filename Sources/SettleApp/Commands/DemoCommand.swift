import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStoreSimulator

/// `settle demo`: settle end to end on a fresh machine with no Apple account.
enum DemoCommand {
    static let spec = ArgumentSpec(command: "demo", options: [.init(name: "--keep", takesValue: false)])

    static let help = """
    Usage: settle demo [--keep]

    Creates a throwaway folder with a ledger, a configuration, a shared secret, a throwaway
    App Store Connect key and a demo hook; starts a local Apple simulator (verifyReceipt and
    the App Store Server API) and a fake Google Play on 127.0.0.1; enqueues orders of every
    kind (valid, sandbox, refunded, forged, a transaction already granted to another order,
    Apple briefly unavailable, StoreKit 2 signed transactions and bare transaction ids, Google
    Play purchases consumed, already acknowledged and pending); runs two reconcile
    passes an hour apart on a simulated clock; prints the resulting status. The folder is
    deleted at the end unless --keep is given.
    """

    static let bundleId = "com.example.game"
    static let issuerId = "demo-issuer"
    static let keyId = "DEMOKEY001"

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let folder = try makeFolder()
        // The folder holds a key and a shared secret: it goes on every way out. Errors and a
        // closed stdout (writes fail quietly) reach the defer below; SIGINT and SIGTERM would
        // kill us before it, so they remove it themselves.
        let removal = parsed.has("--keep") ? nil : FolderRemovalOnSignal(folder: folder)
        defer {
            removal?.cancel()
            if parsed.has("--keep") {
                context.print("\nkept \(folder) (ledger.sqlite3, settle.json, shared-secret, appstore-key.p8, play-service-account.json, simulator-root.pem, grant-goods.sh, granted.log, revoke-goods.sh, revoked.log)")
            } else {
                try? FileManager.default.removeItem(atPath: folder)
                context.print("\nremoved \(folder); nothing else was written")
            }
        }
        let secret = "demo-shared-secret-\(UInt64.random(in: 0..<UInt64.max))"
        // An hour in the past: the second pass, an hour later, runs at the real now, so a kept
        // ledger reads true afterwards to settle status and settle web (scripts/web-screenshots.sh).
        let time = ManualTimeSource(Date().addingTimeInterval(-3600))
        let keyPEM = try ES256PrivateKey.generatePEM()
        let credentials = ServerAPICredentials(issuerId: issuerId, keyId: keyId, bundleId: bundleId,
                                               publicKey: try ES256PrivateKey(pem: keyPEM).publicKey)
        let simulator: AppleSimulator
        do {
            simulator = try AppleSimulator(sharedSecret: secret, credentials: credentials, time: time)
        } catch {
            throw CommandFailure(.unavailable, "cannot start the Apple simulator on 127.0.0.1: \(error)")
        }
        defer { simulator.stop() }
        let configPath = try writeFiles(folder: folder, secret: secret, keyPEM: keyPEM, simulator: simulator)
        let play = try DemoGooglePlay.start(folder: folder, time: time)
        defer { play.server.stop() }
        try play.addToConfiguration(configPath)
        let orders = try scriptOrders(simulator, now: time.now) + play.orders
        var quiet = context
        quiet.time = time
        let configuration = try quiet.loadConfiguration(try ParsedArguments(["--config", configPath], spec: spec))
        let ledger = try SQLiteLedger(path: configuration.ledgerPath, time: time)
        for order in orders { _ = try ledger.enqueue(order) }
        let reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: context.environment,
                                                   log: Log(environment: [:], time: time, sink: { _ in }), modules: StoreModules.all)
        context.print("settle demo: Apple simulator at \(simulator.productionURL.replacingOccurrences(of: "/production/verifyReceipt", with: "")), ledger in \(folder)")
        context.print("enqueued \(orders.count) orders: \(orders.map(\.orderId).joined(separator: ", "))\n")
        let first = try reconciler.runPass()
        context.print("pass 1: \(first.summaryLine)")
        time.advance(by: 3600)
        let second = try reconciler.runPass()
        context.print("pass 2 (an hour later): \(second.summaryLine)\n")
        context.print(StatusView.text(try ledger.summary(OrderFilter(limit: 50)), now: time.unixSeconds))
        if let record = try ledger.orderRecord("o-1005") {
            context.print("o-1005, whose first verification met an Apple outage:\n")
            context.print(StatusView.text(record.order, history: record.history, now: time.unixSeconds))
        }
        context.print(play.summary() + "\n")
        let granted = (try? String(contentsOfFile: folder + "/granted.log", encoding: .utf8)) ?? ""
        context.print("the demo hook was called \(granted.split(separator: "\n").count) times (idempotency key, order):\n" + granted)
        try showNotifications(context, simulator: simulator, ledger: ledger, reconciler: reconciler, time: time, folder: folder)
        try showAppleAccounts(context, simulator: simulator, ledger: ledger, reconciler: reconciler, time: time)
    }

    static func makeFolder() throws(CommandFailure) -> String {
        var template = Array(((NSTemporaryDirectory() as NSString).appendingPathComponent("settle-demo-XXXXXX")).utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CommandFailure(.ioError, "cannot create a temporary folder: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    static func writeFiles(folder: String, secret: String, keyPEM: String, simulator: AppleSimulator) throws(CommandFailure) -> String {
        let hook = """
        #!/bin/sh
        # The demo's delivery hook: a real backend would grant the goods idempotently by key.
        payload=$(cat)
        echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(folder)/granted.log"
        echo "granted $SETTLE_ORDER_ID: $payload"
        """
        let config = JSONValue.object([
            ("ledger", .string(folder + "/ledger.sqlite3")),
            ("bundle_id", .string(bundleId)),
            ("accept_sandbox", .bool(true)),
            ("receipt_api", .object([
                ("production_url", .string(simulator.productionURL)),
                ("sandbox_url", .string(simulator.sandboxURL)),
                ("shared_secret_file", .string("shared-secret")),
            ])),
            ("server_api", .object([
                ("production_url", .string(simulator.serverProductionURL)),
                ("sandbox_url", .string(simulator.serverSandboxURL)),
                ("issuer_id", .string(issuerId)),
                ("key_id", .string(keyId)),
                ("private_key_file", .string("appstore-key.p8")),
                ("root_certificates", .array([.string("simulator-root.pem")])),
                // The demo's receipts go to the simulated verifyReceipt; this anchors any read locally.
                ("receipt_root_certificates", .array([.string("simulator-root.pem")])),
            ])),
            ("products", .object([
                ("com.example.game.coins100", .object([("type", .string("consumable")), ("grant", .object([("coins", .number(100))]))])),
                ("com.example.game.premium", .object([("type", .string("non_consumable"))])),
                ("com.example.game.monthly", .object([("type", .string("auto_renewable"))])),
            ])),
            ("delivery", .object([("command", .array([.string("/bin/sh"), .string(folder + "/grant-goods.sh")])),
                                  ("revoke_command", .array([.string("/bin/sh"), .string(folder + "/revoke-goods.sh")])),
                                  ("timeout_seconds", .number(10))])),
            ("notifications", .object([("listen", .string("127.0.0.1:0"))])),
            ("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true)),
                                     ("refund_preference", .string("DECLINE"))])),
            ("schedule", .object([("concurrency", .number(4)), ("max_attempts", .number(5))])),
            ("http", .object([("connect_timeout_seconds", .number(2)), ("timeout_seconds", .number(5))])),
        ])
        let fm = FileManager.default
        let ok = fm.createFile(atPath: folder + "/shared-secret", contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600])
            && fm.createFile(atPath: folder + "/appstore-key.p8", contents: Data(keyPEM.utf8), attributes: [.posixPermissions: 0o600])
            && fm.createFile(atPath: folder + "/simulator-root.pem", contents: Data(SimulatorSigningChain.rootPEM.utf8))
            && fm.createFile(atPath: folder + "/grant-goods.sh", contents: Data(hook.utf8), attributes: [.posixPermissions: 0o700])
            && fm.createFile(atPath: folder + "/revoke-goods.sh", contents: Data(revokeHook(folder).utf8), attributes: [.posixPermissions: 0o700])
            && fm.createFile(atPath: folder + "/settle.json", contents: Data(config.serialized(pretty: true).utf8))
        guard ok else { throw CommandFailure(.ioError, "cannot write the demo's files in \(folder)") }
        return folder + "/settle.json"
    }

    /// Scripts the simulator and returns the orders to enqueue, one of every kind.
    static func scriptOrders(_ simulator: AppleSimulator, now: Date) throws -> [NewOrder] {
        let ms = Int64(now.timeIntervalSince1970 * 1000) - 600_000
        func receipt(_ name: String) -> String { Data("demo receipt \(name)".utf8).base64EncodedString() }
        let coins = "com.example.game.coins100", premium = "com.example.game.premium"
        let valid = receipt("valid"), sandbox = receipt("sandbox"), refunded = receipt("refunded")
        let forged = receipt("forged"), outage = receipt("outage")
        simulator.script(valid, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, inApp: [
            SimulatedTransaction(productId: coins, transactionId: "2000000100000001", purchaseDateMs: ms)])))
        simulator.script(sandbox, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, environment: "Sandbox", inApp: [
            SimulatedTransaction(productId: premium, transactionId: "2000000100000002", purchaseDateMs: ms)])))
        simulator.script(refunded, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, inApp: [
            SimulatedTransaction(productId: coins, transactionId: "2000000100000003", purchaseDateMs: ms,
                                 cancellationDateMs: ms + 60_000)])))
        simulator.script(forged, .forged)
        simulator.script(outage, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, inApp: [
            SimulatedTransaction(productId: coins, transactionId: "2000000100000005", purchaseDateMs: ms)]),
                                               answers: [.status(21005)]))
        // Apple's Server API knows that purchase too: Finish Transaction finds it once it is delivered.
        simulator.script(transaction: "2000000100000005", TransactionScript(transaction: SimulatedSignedTransaction(
            transactionId: "2000000100000005", productId: coins, bundleId: bundleId, purchaseDateMs: ms)))
        // StoreKit 2: a device's signed transaction, a forged one, a bare sandbox transaction id
        // bound to its buyer by appAccountToken, and the same id claimed by a stranger.
        let buyerToken = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        let signed = SimulatedSignedTransaction(transactionId: "2000000200000001", productId: premium, bundleId: bundleId,
                                                purchaseDateMs: ms, type: "Non-Consumable")
        var sandboxOnly = SimulatedSignedTransaction(transactionId: "2000000200000002", productId: coins, bundleId: bundleId,
                                                     environment: "Sandbox", purchaseDateMs: ms)
        sandboxOnly.appAccountToken = buyerToken
        simulator.script(transaction: signed.transactionId, TransactionScript(transaction: signed))
        simulator.script(transaction: sandboxOnly.transactionId, TransactionScript(transaction: sandboxOnly))
        let signedToken = try signed.signed(at: ms + 1000)
        var forgedPayload = signed.payload(signedAt: ms + 1000)
        if case var .object(members) = forgedPayload, let i = members.firstIndex(where: { $0.0 == "quantity" }) {
            members[i].1 = .number(50)
            forgedPayload = .object(members)
        }
        let parts = signedToken.split(separator: ".")
        let forgedToken = "\(parts[0]).\(Base64URL.encode(forgedPayload.data)).\(parts[2])"
        return [
            NewOrder(orderId: "o-2001", userId: "u-50", productId: premium, signedTransaction: signedToken),
            NewOrder(orderId: "o-2002", userId: "u-51", productId: coins, transactionId: sandboxOnly.transactionId,
                     appAccountToken: buyerToken),
            NewOrder(orderId: "o-2004", userId: "u-66", productId: coins, transactionId: sandboxOnly.transactionId,
                     appAccountToken: "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4"),
            NewOrder(orderId: "o-2003", userId: "u-52", productId: premium, signedTransaction: forgedToken),
            NewOrder(orderId: "o-1001", userId: "u-42", productId: coins, transactionId: "2000000100000001", receipt: valid),
            NewOrder(orderId: "o-1002", userId: "u-43", productId: premium, receipt: sandbox),
            NewOrder(orderId: "o-1003", userId: "u-44", productId: coins, transactionId: "2000000100000003", receipt: refunded),
            NewOrder(orderId: "o-1004", userId: "u-45", productId: coins, receipt: forged),
            NewOrder(orderId: "o-1005", userId: "u-46", productId: coins, transactionId: "2000000100000005", receipt: outage),
            NewOrder(orderId: "o-1006", userId: "u-47", productId: coins, transactionId: "2000000100000001", receipt: valid),
        ]
    }
}

/// Removes the demo's folder and exits 128+signal when SIGINT or SIGTERM arrives.
final class FolderRemovalOnSignal {
    private var sources: [any DispatchSourceSignal] = []

    init(folder: String) {
        for signalNumber in [SIGINT, SIGTERM] {
            // Dispatch sees the signal only once its default action (death) is off.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                try? FileManager.default.removeItem(atPath: folder)
                _exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
        sources = []
    }
}
