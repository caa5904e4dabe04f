import Foundation
import SettleApp
import Synchronization
import SettleBase
import SettleConfig
import SettleLedger
import SettleEngine
import SettleAppStoreSimulator

/// A throwaway installation of settle for one test: a folder with a configuration, a shared
/// secret, hook scripts and a ledger, and a local Apple simulator on loopback.
package final class TestWorld: @unchecked Sendable {
    package let folder: String
    package let simulator: AppleSimulator
    /// Distinctive so tests can prove it never leaks into output, logs or the ledger.
    package let sharedSecret = "SECRET-5f1e2d3c4b5a69788796a5b4c3d2e1f0"
    package let bundleId = "com.example.game"
    package let coins = "com.example.game.coins100"
    package let premium = "com.example.game.premium"
    package let monthly = "com.example.game.monthly"
    package let time: ManualTimeSource
    /// App Store Server API credentials the simulator accepts (the test .p8 key).
    package let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    package let keyId = "TESTKEY123"
    package let signingKey: ES256PrivateKey
    /// Where the default hook appends one line per call: "<idempotency key> <order id>".
    package var deliveriesPath: String { folder + "/deliveries.log" }

    package init() throws {
        var template = Array(((NSTemporaryDirectory() as NSString).appendingPathComponent("settle-test-XXXXXX")).utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        folder = String(cString: made)
        // Starts at the real time so that tokens minted by a settle process (real clock) and by
        // in-process reconcilers (this clock) both look current to the simulator.
        time = ManualTimeSource(Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))
        let keyPEM = try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testSigningKey.p8"), encoding: .utf8)
        signingKey = try ES256PrivateKey(pem: keyPEM)
        simulator = try AppleSimulator(sharedSecret: sharedSecret,
                                       credentials: ServerAPICredentials(issuerId: issuerId, keyId: keyId, bundleId: bundleId,
                                                                         publicKey: signingKey.publicKey),
                                       time: time)
        try write("shared-secret", sharedSecret, mode: 0o600)
        try write("appstore-key.p8", keyPEM, mode: 0o600)
        try write("simulator-root.pem", SimulatorSigningChain.rootPEM)
        // Installed next to the configuration as the README says: the StoreKit 2 anchor when
        // there is no server_api section (Apple's real root, so only Apple's data verifies).
        try write("AppleRootCA-G3.pem", String(contentsOfFile: TestWorld.fixture("apple/roots/AppleRootCA-G3.pem"), encoding: .utf8))
        // The same test CA, as the anchor of receipts built by AppReceiptBuilder.buildSignedByTestChain.
        try write("receipt-root.pem", SimulatorSigningChain.rootPEM)
        _ = try hook("grant.sh", exit: 0)
    }

    deinit {
        simulator.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A file of the test fixtures (Tests/SettleCoreTests/Fixtures).
    package static func fixture(_ relative: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../SettleCoreTests/Fixtures/\(relative)").standardized.path
    }

    package var ledgerPath: String { folder + "/ledger.sqlite3" }
    package var configPath: String { folder + "/settle.json" }

    @discardableResult
    package func write(_ name: String, _ contents: String, mode: Int = 0o644) throws -> String {
        let path = name.hasPrefix("/") ? name : folder + "/" + name
        guard FileManager.default.createFile(atPath: path, contents: Data(contents.utf8),
                                             attributes: [.posixPermissions: mode]) else {
            throw CocoaError(.fileWriteUnknown)
        }
        return path
    }

    /// A hook script that records its stdin and environment, prints a line, then runs
    /// `extra` (shell) and exits with `exit`.
    @discardableResult
    package func hook(_ name: String, exit code: Int32, extra: String = "") throws -> String {
        try write(name, """
            #!/bin/sh
            payload=$(cat)
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(deliveriesPath)"
            printf '%s\\n' "$payload" > "\(folder)/payload-$SETTLE_ORDER_ID.json"
            echo "hook saw $SETTLE_ORDER_ID"
            \(extra)
            exit \(code)
            """, mode: 0o755)
    }

    /// Lines "<key> <order>" of every hook call so far.
    package var deliveries: [String] {
        ((try? String(contentsOfFile: deliveriesPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Writes settle.json. `overrides` replace or add top-level keys.
    @discardableResult
    package func writeConfig(hook: String? = nil, hookTimeout: Double = 10, acceptSandbox: Bool = true,
                            receiptAPI: Bool = true, serverAPI: Bool = false,
                            schedule: [(String, JSONValue)] = [], overrides: [(String, JSONValue)] = []) throws -> String {
        var members: [(String, JSONValue)] = [
            ("ledger", .string(ledgerPath)),
            ("bundle_id", .string(bundleId)),
            ("accept_sandbox", .bool(acceptSandbox)),
            ("receipt_api", .object([
                ("production_url", .string(simulator.productionURL)),
                ("sandbox_url", .string(simulator.sandboxURL)),
                ("shared_secret_file", .string("shared-secret")),
            ])),
            ("products", .object([
                (coins, .object([("type", .string("consumable")), ("grant", .object([("coins", .number(100))]))])),
                (premium, .object([("type", .string("non_consumable"))])),
                (monthly, .object([("type", .string("auto_renewable"))])),
            ])),
            ("delivery", .object([("command", .array([.string(hook ?? folder + "/grant.sh")])),
                                  ("timeout_seconds", .number(hookTimeout))])),
            ("schedule", .object(TestWorld.merge([("concurrency", .number(4)), ("max_attempts", .number(3)),
                                                  ("backoff_base_seconds", .number(30)), ("backoff_max_seconds", .number(3600))],
                                                 schedule))),
            ("http", .object([("connect_timeout_seconds", .number(2)), ("timeout_seconds", .number(3))])),
            // Daemon tests count passes by their pass.finished lines, which idle passes log at debug.
            ("log_level", .string("debug")),
        ]
        if !receiptAPI { members.removeAll { $0.0 == "receipt_api" } }
        if serverAPI { members.append(("server_api", serverAPIConfig)) }
        members = TestWorld.merge(members, overrides)
        return try write("settle.json", JSONValue.object(members).serialized(pretty: true))
    }

    /// The `server_api` section pointing at the simulator, with the test key and the simulator's root.
    package var serverAPIConfig: JSONValue {
        .object([
            ("production_url", .string(simulator.serverProductionURL)),
            ("sandbox_url", .string(simulator.serverSandboxURL)),
            ("issuer_id", .string(issuerId)),
            ("key_id", .string(keyId)),
            ("private_key_file", .string("appstore-key.p8")),
            ("app_apple_id", .number(1_234_567_890)),
            ("root_certificates", .array([.string("simulator-root.pem")])),
            ("receipt_root_certificates", .array([.string("receipt-root.pem")])),
        ])
    }

    /// Scripts a StoreKit 2 transaction on the simulated Server API and returns it.
    @discardableResult
    package func scriptTransaction(_ id: String, product: String? = nil, environment: String = "Production",
                                  bundleId: String? = nil, revoked: Bool = false, purchaseDateMs: Int64 = 1_764_410_645_000,
                                  originalTransactionId: String? = nil, appAccountToken: String? = nil, isUpgraded: Bool = false,
                                  answers: [SimulatedServerAnswer] = []) -> SimulatedSignedTransaction {
        var transaction = SimulatedSignedTransaction(transactionId: id, originalTransactionId: originalTransactionId,
                                                     productId: product ?? coins, bundleId: bundleId ?? self.bundleId,
                                                     environment: environment, purchaseDateMs: purchaseDateMs,
                                                     revocationDateMs: revoked ? purchaseDateMs + 60_000 : nil)
        transaction.appAccountToken = appAccountToken
        transaction.isUpgraded = isUpgraded
        simulator.script(transaction: id, TransactionScript(transaction: transaction, answers: answers))
        return transaction
    }

    /// Scripts one customer's purchases, so Get Transaction History of any of their ids lists
    /// them all (and Get Transaction Info finds each).
    @discardableResult
    package func scriptCustomer(_ transactions: [SimulatedSignedTransaction]) -> [SimulatedSignedTransaction] {
        for t in transactions { simulator.script(transaction: t.transactionId, TransactionScript(transaction: t)) }
        simulator.script(customer: transactions)
        return transactions
    }

    /// `base` with `changes` replacing keys it has and adding those it lacks.
    package static func merge(_ base: [(String, JSONValue)], _ changes: [(String, JSONValue)]) -> [(String, JSONValue)] {
        var members = base
        for (key, value) in changes {
            if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        }
        return members
    }

    package func configuration() throws -> Configuration {
        try Configuration.load(path: configPath, environment: [:])
    }

    package func ledger() throws -> SQLiteLedger { try SQLiteLedger(path: ledgerPath, time: time) }

    /// A reconciler as `settle reconcile` builds it, on the world's clock, with jitter fixed at 0.
    /// `pacer` nil: the process's own (on the wall clock, new with each reconciler).
    package func reconciler(ledger: any SettleLedger, log: Log = .silent, pacer: Pacer? = nil) throws -> Reconciler {
        try Reconciler.configured(try configuration(), ledger: ledger, environment: ProcessInfo.processInfo.environment,
                                  log: log, random: { 0.5 }, pacer: pacer, modules: TestStores.modules)
    }

    /// A pacer at the configured rates on the world's clock: a wait moves the clock, never sleeps.
    package func pacer() throws -> Pacer {
        let time = self.time
        return Reconciler.storePacer(try configuration(), modules: TestStores.modules, time: time, sleep: { time.advance(by: $0) })
    }

    /// A pacer whose buckets of `keys` are at their floor rate (three 429s) and full again (the
    /// clock moved on ten seconds): the next 429 on one is the store refusing below its rate.
    package func pacer(atFloor keys: [PacerKey]) throws -> Pacer {
        let pacer = try pacer()
        for key in keys {
            for _ in 0..<3 { pacer.throttled(key, retryAfter: 0) }
        }
        time.advance(by: 10)
        return pacer
    }

    /// A base64 receipt unique to `name`.
    package func receipt(_ name: String) -> String { Data("test receipt \(name)".utf8).base64EncodedString() }

    /// Scripts a receipt holding `transactions` and returns its base64 text.
    @discardableResult
    package func scriptReceipt(_ name: String, environment: String = "Production", bundleId: String? = nil,
                              _ transactions: [SimulatedTransaction], latest: [SimulatedTransaction] = [],
                              answers: [SimulatedAnswer] = []) -> String {
        let data = receipt(name)
        simulator.script(data, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId ?? self.bundleId, environment: environment,
                                                                       inApp: transactions, latestReceiptInfo: latest),
                                             answers: answers))
        return data
    }
}

/// Collects log lines from any thread.
package final class LineCollector: Sendable {
    private let storage = Mutex<[String]>([])
    package init() {}
    package func append(_ line: String) { storage.withLock { $0.append(line) } }
    package var lines: [String] { storage.withLock { $0 } }
}
