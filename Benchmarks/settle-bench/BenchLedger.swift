import CSQLite
import Foundation
import SettleApp
import SettleBase
import SettleLedger
import SettleSimulator

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
    func configuration(name: String, ledger: String, apple: FakeAppleProcess?, delivery: Delivery, concurrency: Int) throws -> String {
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
                                    ("receipt_root_certificates", .array([.string("AppleRootCA-G3.pem")]))])),
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
        let database = try SeedDatabase(path: file)
        let now = Int64(Date().timeIntervalSince1970) - 1
        try database.execute("BEGIN IMMEDIATE")
        let receipt = try database.prepare("INSERT INTO receipts(sha256, data, created_at) VALUES (?1, ?2, ?3)")
        let order = try database.prepare("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, receipt_sha256, next_attempt_at, created_at, updated_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?6)
            """)
        let history = try database.prepare("INSERT INTO history(order_id, at, kind, outcome) VALUES (?1, ?2, 'enqueue', 'enqueued')")
        for index in 0..<orders {
            let data = BenchOrders.receipt(index)
            let hash = SHA256.hex(Data(data.utf8))
            if !storeKit { try receipt.run([.text(hash), .text(data), .integer(now)]) }
            try order.run([.text("o-\(index)"), .text("u-\(index % 97)"), .text(BenchOrders.productId),
                           .text(BenchOrders.transactionId(index)), storeKit ? .null : .text(hash), .integer(now)])
            try history.run([.text("o-\(index)"), .integer(now)])
        }
        try database.execute("COMMIT")
        return file
    }

    /// A ledger of `orders` orders in the states of a ledger that has run for a while (94 %
    /// finished, 3 % pending, 2 % rejected, 1 % needs attention; 20 orders a user; one history
    /// row each), for the status views. Plain SQL, so a million rows take seconds.
    func statusLedger(orders: Int) throws -> String {
        let file = try emptyLedger(name: "status")
        let database = try SeedDatabase(path: file)
        let start = Int64(Date().timeIntervalSince1970) - Int64(orders)
        try database.execute("BEGIN IMMEDIATE")
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
        try database.execute("COMMIT")
        return file
    }

    /// Creates the file through `SQLiteLedger`, so it has every migration settle has.
    private func emptyLedger(name: String) throws -> String {
        let file = path + "/\(name).sqlite3"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        _ = try SQLiteLedger(path: file)
        return file
    }
}

/// The few SQLite calls seeding needs.
final class SeedDatabase {
    private let handle: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let handle else {
            throw BenchError("cannot open \(path)")
        }
        self.handle = handle
        try execute("PRAGMA busy_timeout = 10000")
        // Seeding is not what is measured; settle's own connections use synchronous=FULL.
        try execute("PRAGMA synchronous = OFF")
        try execute("PRAGMA foreign_keys = ON")
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "?"
            sqlite3_free(message)
            throw BenchError("seeding failed: \(text)")
        }
    }

    func prepare(_ sql: String) throws -> SeedStatement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw BenchError("cannot prepare: \(String(cString: sqlite3_errmsg(handle)))")
        }
        return SeedStatement(handle: statement, database: handle)
    }
}

final class SeedStatement {
    enum Value { case text(String), integer(Int64), null }
    private let handle: OpaquePointer
    private let database: OpaquePointer

    init(handle: OpaquePointer, database: OpaquePointer) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    func run(_ values: [Value]) throws {
        sqlite3_reset(handle)
        for (index, value) in values.enumerated() {
            switch value {
            case let .text(text): sqlite3_bind_text(handle, Int32(index + 1), text, -1, settle_sqlite_transient())
            case let .integer(number): sqlite3_bind_int64(handle, Int32(index + 1), number)
            case .null: sqlite3_bind_null(handle, Int32(index + 1))
            }
        }
        guard sqlite3_step(handle) == SQLITE_DONE else {
            throw BenchError("seeding failed: \(String(cString: sqlite3_errmsg(database)))")
        }
    }
}
