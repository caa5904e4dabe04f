import Foundation
import SettleApp
import SettleBase
import SettleLedger
import SettleAppStoreSimulator

/// A folder with what a settle configuration needs (shared secret, webhook secret, hook
/// script, the StoreKit root), and ledgers seeded straight with SQL: enqueueing 100 k orders
/// one by one would measure `enqueue`, not the pass.
struct BenchFolder {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "settle-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try write("secret", BenchOrders.sharedSecret, mode: 0o600)
        try write("webhook-secret", BenchOrders.webhookSecret, mode: 0o600)
        // The StoreKit 2 root settle requires next to its configuration (the simulator's).
        try write("AppleRootCA-G3.pem", SimulatorSigningChain.rootPEM, mode: 0o644)
        // The hook of the network rows: reads its payload, grants.
        try write("hook.sh", "#!/bin/sh\ncat > /dev/null\n", mode: 0o755)
        // A batch hook (delivery.batch_size): answers "delivered" for every line, in plain sh
        // (parameter expansion, no process per line).
        try write("batch-hook.sh", """
            #!/bin/sh
            while IFS= read -r line; do
              key=${line#*\\"idempotency_key\\":\\"}
              key=${key%%\\"*}
              printf '{"idempotency_key":"%s","result":"delivered"}\\n' "$key"
            done
            """, mode: 0o755)
        // The App Store Connect key for StoreKit 2 orders (Server API bearer tokens).
        try write("appstore-key.p8", ES256PrivateKey.generatePEM(), mode: 0o600)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ text: String, mode: Int) throws {
        guard FileManager.default.createFile(atPath: path + "/" + name, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: mode]) else {
            throw BenchError("cannot write \(path)/\(name)")
        }
    }

    enum Delivery {
        case command([String])
        /// A command taking `batch` orders a run (delivery.batch_size).
        case batchCommand([String], batch: Int)
        case webhook(String)
    }

    /// Writes a configuration for `ledger` and returns its path.
    /// `finishTransactions`: whether settle tells the fake Apple each delivered transaction is
    /// finished (`server_api.finish_transactions`, settle's default): side work paced at Apple's 50/s.
    func configuration(name: String, ledger: String, apple: FakeAppleProcess?, delivery: Delivery, concurrency: Int,
                       finishTransactions: Bool = BenchFolder.finishTransactions) throws -> String {
        let deliveryObject: JSONValue = switch delivery {
        case let .command(argv): .object([("command", .array(argv.map { .string($0) }))])
        case let .batchCommand(argv, batch): .object([("command", .array(argv.map { .string($0) })), ("batch_size", .number(batch))])
        case let .webhook(url): .object([("webhook", .object([("url", .string(url)), ("secret_file", .string("webhook-secret"))]))])
        }
        let config = JSONValue.object([
            ("ledger", .string(ledger)), ("bundle_id", .string(BenchOrders.bundleId)),
            ("receipt_api", .object([("production_url", .string(apple?.appleURL ?? "http://127.0.0.1:9/production/verifyReceipt")),
                                     ("sandbox_url", .string(apple?.sandboxURL ?? "http://127.0.0.1:9/sandbox/verifyReceipt")),
                                     ("shared_secret_file", .string("secret"))])),
            ("products", .object([(BenchOrders.productId, .object([("type", .string("consumable"))]))])),
            ("server_api", .object([("production_url", .string(apple?.serverURL ?? "http://127.0.0.1:9/production")),
                                    ("sandbox_url", .string(apple?.serverSandboxURL ?? "http://127.0.0.1:9/sandbox")),
                                    ("issuer_id", .string(BenchOrders.issuerId)), ("key_id", .string(BenchOrders.keyId)),
                                    ("private_key_file", .string("appstore-key.p8")),
                                    ("root_certificates", .array([.string("AppleRootCA-G3.pem")])),
                                    ("receipt_root_certificates", .array([.string("AppleRootCA-G3.pem")])),
                                    ("finish_transactions", .bool(finishTransactions))])),
            // The backend enqueues transaction ids it got from Apple for this user itself.
            ("user_binding", .object([("unsigned_proofs", .string("trust"))])),
            ("delivery", deliveryObject),
            ("schedule", .object([("concurrency", .number(concurrency))])),
        ])
        let file = path + "/\(name).json"
        try write("\(name).json", config.serialized(), mode: 0o644)
        return file
    }

    /// A ledger at settle's current schema holding `orders` due orders, as `settle enqueue`
    /// would have written them: each with its receipt, or with `storeKit` only its StoreKit 2
    /// transaction id (verified through the Server API and its JWS).
    func dueLedger(name: String, orders: Int, storeKit: Bool = false) throws -> String {
        let file = try emptyLedger(name: name)
        let database = try BenchFolder.seedDatabase(file)
        let now = Int64(Date().timeIntervalSince1970) - 1
        // One transaction; each INSERT is prepared once and reused (SQLiteDatabase keeps its
        // statements by SQL text).
        try database.writeTransaction {
            for index in 0..<orders {
                let data = BenchOrders.receipt(index)
                let hash = SHA256.hex(Data(data.utf8))
                if !storeKit {
                    try database.query("INSERT INTO receipts(sha256, data, created_at) VALUES (?1, ?2, ?3)",
                                       [.text(hash), .text(data), .integer(now)])
                }
                try database.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, next_attempt_at, created_at, updated_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?6)
                    """, [.text("o-\(index)"), .text("u-\(index % 97)"), .text(BenchOrders.productId),
                          .text(BenchOrders.transactionId(index)), storeKit ? .null : .text(hash), .integer(now)])
                try database.query("INSERT INTO history(order_id, at, kind, outcome) VALUES (?1, ?2, 'enqueue', 'enqueued')",
                                   [.text("o-\(index)"), .integer(now)])
            }
        }
        return file
    }

    /// A ledger of `orders` orders in the states of a ledger that has run for a while (94 %
    /// finished, 3 % pending, 2 % rejected, 1 % needs attention; 20 orders a user; one history
    /// row each), for the status views. Plain SQL, so a million rows take seconds.
    func statusLedger(orders: Int) throws -> String {
        let file = try emptyLedger(name: "status")
        let database = try BenchFolder.seedDatabase(file)
        let start = Int64(Date().timeIntervalSince1970) - Int64(orders)
        try database.writeTransaction {
            try database.execute("""
                WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(orders - 1))
                INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, attempts, next_attempt_at, reason,
                                   environment, verified_transaction_id, original_transaction_id, verified_product_id, quantity,
                                   grant_key, created_at, updated_at, finished_at)
                SELECT 'o-' || i, 'u-' || (i % \(max(1, orders / 20))), 'coins', CAST(3000000000 + i AS TEXT),
                       CASE WHEN i % 100 < 94 THEN 'finished' WHEN i % 100 < 97 THEN 'pending'
                            WHEN i % 100 < 99 THEN 'rejected' ELSE 'needs_attention' END,
                       1, \(start) + i,
                       CASE WHEN i % 100 >= 97 THEN 'no_match' END,
                       'Production',
                       CASE WHEN i % 100 < 94 THEN CAST(3000000000 + i AS TEXT) END,
                       CASE WHEN i % 100 < 94 THEN CAST(3000000000 + i AS TEXT) END,
                       CASE WHEN i % 100 < 94 THEN 'coins' END,
                       CASE WHEN i % 100 < 94 THEN 1 END,
                       CASE WHEN i % 100 < 94 THEN CAST(3000000000 + i AS TEXT) END,
                       \(start) + i, \(start) + i,
                       CASE WHEN i % 100 < 94 THEN \(start) + i END
                FROM n;
                """)
            try database.execute("""
                INSERT INTO history(order_id, at, kind, outcome, hook_exit)
                SELECT order_id, updated_at, 'delivery', 'delivered', 0 FROM orders WHERE state = 'finished';
                """)
        }
        return file
    }

    /// Creates the file through `SQLiteLedger`, so it has every migration settle has.
    func emptyLedger(name: String) throws -> String {
        let file = path + "/\(name).sqlite3"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        _ = try SQLiteLedger(path: file)
        return file
    }

    /// A connection for seeding: SettleLedger's own `SQLiteDatabase`, without the fsyncs
    /// (seeding is not what is measured; settle's own connections use synchronous=FULL).
    static func seedDatabase(_ file: String) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: file, mode: .readWrite)
        try database.execute("PRAGMA synchronous = OFF")
        try database.execute("PRAGMA foreign_keys = ON")
        return database
    }
}

extension BenchFolder {
    /// The passes' rows measure the reconcile pass; Finish Transaction after it is paced at
    /// Apple's 50/s (100 calls a pass: about 1.3 s of every pass, whatever settle's speed),
    /// so they run with it off and `--rows finish` shows its cost.
    static let finishTransactions = false
}
