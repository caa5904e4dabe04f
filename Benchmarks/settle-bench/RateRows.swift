import Foundation
import SettleApp
import SettleBase
import SettleGooglePlay
import SettleLedger

/// The rate-limit rows (issue 27, `--rows rate`): a backlog of due orders across both stores
/// drained against fakes that refuse over the limit per endpoint group, with settle's
/// `rate_limits` set to that limit. Each run is one `--run-pass` child against one
/// `--serve-stores` child; the measures are read from what the stores' limits counted.
struct RateRows {
    let options: BenchOptions
    let bench: String
    let folder: BenchFolder

    /// One drain and what it showed.
    struct Drain {
        var pass: [PassResult]
        var stores: RateLimitedStoresProcess.Record
        /// Play order ids in the order they were delivered (SQLite runs only).
        var playDeliveryOrder: [String]
        /// What became of the refund requests waiting when the drain began (SQLite runs only).
        var consumption: ConsumptionOutcome?
    }

    /// The answers to Apple's refund requests seeded with the backlog, read after the drain.
    struct ConsumptionOutcome {
        var sent: Int
        var notAnswered: Int
        /// Seconds after the drain began that the last answer went (the ledger's clock).
        var lastSentAfter: Int64?
        /// Why one was not sent, if any was not.
        var why: String?
    }

    var appleOrders: Int { options.rateOrders - playOrders }
    /// A Play order costs `RateOrders.playCallsPerOrder` calls of its bucket, an App Store
    /// order one: this share of the backlog on Play makes both stores' drains take as long.
    /// (settle's workers take claimed orders in claim order and wait for their bucket's token,
    /// so with another mix the store that is the bottleneck holds the workers and the other's
    /// bucket goes partly unused: with a third on Play, App Store ran at 0.67 of its limit.)
    var playOrders: Int { options.rateOrders / (RateOrders.playCallsPerOrder + 1) }
    var rate: Double { Double(options.rateLimit) }
    /// The outage window, seconds after the stores' first request.
    var outage: Range<Double> { options.quick ? 2..<6 : 10..<30 }

    func run(_ emit: (String) -> Void) throws {
        let r = options.rateLimit
        emit(String(format: "\n-- rate limits: %d due orders (%d App Store StoreKit 2, %d Google Play) against stores that answer 429 over %d/s per endpoint group; settle's rate_limits = %d/s; webhook; concurrency %d",
                    options.rateOrders, appleOrders, playOrders, r, r, options.concurrency))
        emit(Self.columns("measure", "measured", "goal"))
        let base = try drain(tag: "rate")
        let apple = base.stores.apple["transaction_info"], google = base.stores.google["one_time_purchases"]
        for (name, counts) in [("App Store transaction_info", apple), ("Google Play one_time_purchases", google)] {
            guard let counts else { emit(Self.columns("drained throughput / limit, \(name)", "no requests", ">= 0.95")); continue }
            emit(Self.columns("drained throughput / limit, \(name)",
                              String(format: "%.3f (%.1f/s over %d s)", counts.steadyRate / rate, counts.steadyRate, counts.drainSeconds),
                              ">= 0.95"))
        }
        for (name, counts) in [("App Store transaction_info", apple), ("Google Play one_time_purchases", google)] {
            guard let counts else { continue }
            emit("  (grants a second, \(name): \(counts.grantsPerSecond.map(String.init).joined(separator: " ")))")
        }
        let all = Array(base.stores.apple.values) + Array(base.stores.google.values)
        if let google, base.playDeliveryOrder.count > 0 {
            emit(String(format: "  (Play calls per settled order: %.2f)", Double(google.granted) / Double(base.playDeliveryOrder.count)))
        }
        emit(Self.columns("429s after the first second (all groups)",
                          "\(all.reduce(0) { $0 + $1.refusedAfterFirstSecond }) (in the first: \(all.reduce(0) { $0 + $1.refused - $1.refusedAfterFirstSecond }))",
                          "0"))
        if let pass = base.pass.first {
            emit(Self.columns("the drain", String(format: "%d of %d settled in %.1f s, %.3f ms CPU/order", pass.finished, options.rateOrders,
                                                  pass.wall, pass.cpuPerOrderMs), ""))
            if pass.finished != options.rateOrders { emit("  (summary: \(pass.summary))") }
        }
        emit(Self.columns("Play order nearest its refund deadline", priorityCell(base.playDeliveryOrder), "settled 1st"))
        if let answers = base.consumption {
            let last = answers.lastSentAfter.map { ", the last \($0) s into the drain" } ?? ""
            emit(Self.columns("consumption answers within Apple's deadline",
                              "\(answers.sent) of \(RateOrders.consumptionRequests) sent before it\(last); \(answers.notAnswered) past it",
                              "all"))
            emit("  (\(RateOrders.consumptionRequests) refund requests received almost 12 hours before the drain: Apple's deadline falls \(RateOrders.consumptionDeadlineSeconds) s into it)")
            if let why = answers.why { emit("  (one not sent: \(why))") }
        }

        // An outage of one store during the drain: the other's throughput in that window,
        // against its steady throughput in the run without an outage.
        let window = Int(outage.lowerBound) + 1..<Int(outage.upperBound)
        let appleDown = try drain(tag: "rate-apple-down", appleOutage: outage)
        let playDown = try drain(tag: "rate-play-down", playOutage: outage)
        let w = String(format: "%.0f-%.0f s", outage.lowerBound, outage.upperBound)
        // The same seconds of the run without an outage, and the limit, as the yardsticks.
        for (name, during, without) in [("App Store down (\(w)): Play throughput", appleDown.stores.google["one_time_purchases"], google),
                                        ("Google Play down (\(w)): App Store throughput", playDown.stores.apple["transaction_info"], apple)] {
            guard let during, let without else { continue }
            let rateIn = during.rate(over: window), rateWithout = without.rate(over: window)
            emit(Self.columns(name, String(format: "%.3f of the run without (%.1f/s vs %.1f/s); %.3f of the limit",
                                           rateIn / rateWithout, rateIn, rateWithout, rateIn / rate), ">= 0.95"))
        }
        for (name, run) in [("App Store down", appleDown), ("Google Play down", playDown)] {
            let groups = Array(run.stores.apple.values) + Array(run.stores.google.values)
            let settled = run.pass.first.map { "\($0.finished) of \(options.rateOrders) settled in the pass" } ?? ""
            emit("  (\(name): \(settled); outage answers \(groups.reduce(0) { $0 + $1.outage }), 429s after the first second \(groups.reduce(0) { $0 + $1.refusedAfterFirstSecond }))")
            for (group, counts) in [("App Store transaction_info", run.stores.apple["transaction_info"]),
                                    ("Google Play one_time_purchases", run.stores.google["one_time_purchases"])] {
                guard let counts else { continue }
                emit("  (\(name), grants a second, \(group): \(counts.grantsPerSecond.map(String.init).joined(separator: " ")))")
            }
        }
        try twoHosts(emit)
    }

    /// Two settle processes (distinct lease owners) on one PostgreSQL ledger: what they sent
    /// and were granted together, against the limit.
    private func twoHosts(_ emit: (String) -> Void) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["SETTLE_BENCH_POSTGRES_URL"] ?? environment["SETTLE_TEST_POSTGRES_URL"] else {
            emit(Self.columns("two hosts on one PostgreSQL ledger", "no server (set SETTLE_BENCH_POSTGRES_URL)", "<= 1.0 and >= 0.9"))
            return
        }
        let run = try drain(tag: "rate-pg", postgres: url, hosts: 2)
        for (name, counts) in [("App Store transaction_info", run.stores.apple["transaction_info"]),
                               ("Google Play one_time_purchases", run.stores.google["one_time_purchases"])] {
            guard let counts else { continue }
            // A drain of a few seconds is no rate: a token bucket lets up to twice its rate
            // through in one wall-clock second, and what stopped it is the finding.
            guard counts.drainSeconds >= 5 else {
                emit(Self.columns("two hosts, \(name)", "not measurable: the drain stopped after \(counts.drainSeconds) s (\(counts.granted) granted, \(counts.refused) refused)",
                                  "<= 1.00 sent, >= 0.90 granted"))
                continue
            }
            emit(Self.columns("two hosts, sent / limit, \(name)", String(format: "%.2f (%.1f/s)", counts.steadySentRate / rate, counts.steadySentRate),
                              "<= 1.00"))
            emit(Self.columns("two hosts, granted / limit, \(name)", String(format: "%.3f (%.1f/s; 429s after the first second %d)",
                                                                            counts.steadyRate / rate, counts.steadyRate,
                                                                            counts.refusedAfterFirstSecond), ">= 0.90"))
        }
        for (name, counts) in [("App Store transaction_info", run.stores.apple["transaction_info"]),
                               ("Google Play one_time_purchases", run.stores.google["one_time_purchases"])] {
            guard let counts else { continue }
            emit("  (two hosts, granted a second / refused a second, \(name): \(counts.grantsPerSecond.map(String.init).joined(separator: " ")) / \(counts.refusalsPerSecond.map(String.init).joined(separator: " ")))")
        }
        for pass in run.pass { emit("  (a host's pass: \(pass.summary), \(String(format: "%.1f s", pass.wall)))") }
        let finished = run.pass.reduce(0) { $0 + $1.finished }
        emit("  (two hosts: \(finished) of \(options.rateOrders) settled in one pass each, \(run.pass.map { String($0.finished) }.joined(separator: " + ")); both registered as daemons, so each takes half of every bucket)")
    }

    private func priorityCell(_ order: [String]) -> String {
        let nearest = RateOrders.playOrderId(playOrders - 1)
        guard let position = order.firstIndex(of: nearest) else { return "not settled" }
        let urgent = Set((playOrders - RateOrders.urgent..<playOrders).map(RateOrders.playOrderId))
        let urgentPositions = order.enumerated().filter { urgent.contains($0.element) }.map { $0.offset + 1 }
        return "settled \(position + 1) of \(order.count) (the \(urgent.count) within a day of it: \(urgentPositions.map(String.init).joined(separator: ",")))"
    }

    // MARK: One drain

    private func drain(tag: String, appleOutage: Range<Double>? = nil, playOutage: Range<Double>? = nil,
                       postgres: String? = nil, hosts: Int = 1) throws -> Drain {
        let now = Int64(Date().timeIntervalSince1970) - 1
        let ledger = try dueLedger(name: "settle-\(tag)", now: now)
        var arguments = RateLimitedStores.Arguments()
        arguments.storeKitKey = folder.path + "/appstore-key.p8"
        arguments.playKey = try playKey()
        arguments.appleOrders = appleOrders
        arguments.playOrders = playOrders
        arguments.now = now
        arguments.rate = rate
        arguments.appleOutage = appleOutage
        arguments.playOutage = playOutage
        let stores = try RateLimitedStoresProcess(bench: bench, arguments: arguments)
        var results: [PassResult] = []
        var deliveries: [String] = []
        var consumption: ConsumptionOutcome?
        do {
            var ledgerURL = ledger
            var cleanup: () -> Void = {}
            if let postgres { (ledgerURL, cleanup) = try Self.moveToPostgres(ledger, url: postgres, schema: "bench_rate_\(getpid())") }
            defer { cleanup() }
            let config = try configuration(name: "settle-\(tag)", ledger: ledgerURL, stores: stores)
            results = try Self.passes(bench: bench, config: config, hosts: hosts, timeout: options.passTimeout)
            if postgres == nil {
                deliveries = try Self.playDeliveryOrder(ledger)
                consumption = try Self.consumptionOutcome(ledger, drainBegan: now)
            }
        } catch {
            _ = try? stores.stop()
            throw error
        }
        let record = try stores.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: ledger + suffix) }
        return Drain(pass: results, stores: record, playDeliveryOrder: deliveries, consumption: consumption)
    }

    /// `hosts` passes at once over one configuration, each in a process of its own.
    static func passes(bench: String, config: String, hosts: Int, timeout: Double) throws -> [PassResult] {
        let lock = NSLock()
        nonisolated(unsafe) var outcomes: [Result<(status: Int32, output: String), Error>] = []
        let group = DispatchGroup()
        for _ in 0..<hosts {
            group.enter()
            Thread {
                defer { group.leave() }
                let daemons = hosts > 1 ? ["--as-one-of-daemons", String(hosts)] : []
                let outcome = Result { try ChildProcess.run([bench, "--run-pass", config] + daemons, timeout: timeout) }
                lock.withLock { outcomes.append(outcome) }
            }.start()
        }
        group.wait()
        return try outcomes.map { outcome in
            let (status, output) = try outcome.get()
            guard status == 0 else { throw BenchError("rate-limited pass exited \(status): \(output.suffix(400))") }
            return PassResult(orders: 0, json: try ChildProcess.lastJSON(output), finishedKey: "finished")
        }
    }

    /// The Play orders' first deliveries, in the order the ledger recorded them.
    private static func playDeliveryOrder(_ ledger: String) throws -> [String] {
        let database = try SQLiteDatabase(path: ledger, mode: .readOnly)
        return try database.query("""
            SELECT h.order_id AS order_id FROM history h JOIN orders o ON o.order_id = h.order_id
            WHERE o.store = 'google_play' AND h.kind = 'delivery' AND h.outcome = 'delivered'
            GROUP BY h.order_id ORDER BY min(h.id)
            """).compactMap { $0.string("order_id") }
    }

    /// The seeded refund requests' answers: sent, given up past the deadline, and when the last went.
    private static func consumptionOutcome(_ ledger: String, drainBegan: Int64) throws -> ConsumptionOutcome {
        let database = try SQLiteDatabase(path: ledger, mode: .readOnly)
        let row = try database.query("""
            SELECT sum(state = 'sent') AS sent, sum(state = 'failed') AS failed,
                   max(CASE WHEN state = 'sent' THEN updated_at END) AS last
            FROM consumption_answers
            """).first
        return ConsumptionOutcome(sent: Int(row?.int("sent") ?? 0), notAnswered: Int(row?.int("failed") ?? 0),
                                  lastSentAfter: row?.int("last").map { $0 - drainBegan },
                                  why: try database.query("SELECT last_error FROM consumption_answers WHERE state != 'sent' LIMIT 1")
                                      .first?.string("last_error"))
    }

    /// Seeded as SQLite, then moved with `LedgerCopy` as `settle ledger copy` does; returns the
    /// schema's URL and what drops it.
    static func moveToPostgres(_ sqlite: String, url: String, schema: String) throws -> (String, () -> Void) {
        let admin = try PostgresConnection(url: url)
        try admin.execute("SET client_min_messages = warning")
        try admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        try admin.execute("CREATE SCHEMA \(schema)")
        let schemaURL = url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        let destination = try PostgresLedger(url: schemaURL, access: .migrating)
        _ = try LedgerCopy.copy(fromSQLite: sqlite, to: destination)
        try destination.close()
        return (schemaURL, {
            try? admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
            admin.close()
        })
    }

    // MARK: Setup

    /// The service account key settle signs its Google assertions with (the fake keeps the public half).
    func playKey() throws -> String {
        let file = folder.path + "/play-service-account.json"
        if FileManager.default.fileExists(atPath: file) { return file }
        let document = ServiceAccountKey.document(clientEmail: RateOrders.serviceAccountEmail, privateKeyId: "bench-key",
                                                  privateKeyPEM: try RSAPrivateKey.generatePEM(),
                                                  tokenURI: "https://oauth2.googleapis.com/token")
        try folder.write("play-service-account.json", document.serialized(), mode: 0o600)
        return file
    }

    private func configuration(name: String, ledger: String, stores: RateLimitedStoresProcess) throws -> String {
        let limit = JSONValue.number(rate)
        let config = JSONValue.object([
            ("ledger", .string(ledger)), ("bundle_id", .string(BenchOrders.bundleId)),
            ("receipt_api", .object([("production_url", .string(stores.receiptURL)), ("sandbox_url", .string(stores.receiptSandboxURL)),
                                     ("shared_secret_file", .string("secret"))])),
            ("products", .object([
                (BenchOrders.productId, .object([("type", .string("consumable"))])),
                (RateOrders.playProduct, .object([("type", .string("consumable")), ("store", .string("google_play"))])),
            ])),
            ("server_api", .object([("production_url", .string(stores.serverURL)), ("sandbox_url", .string(stores.serverSandboxURL)),
                                    ("issuer_id", .string(BenchOrders.issuerId)), ("key_id", .string(BenchOrders.keyId)),
                                    ("private_key_file", .string("appstore-key.p8")),
                                    ("root_certificates", .array([.string("AppleRootCA-G3.pem")])),
                                    ("receipt_root_certificates", .array([.string("AppleRootCA-G3.pem")])),
                                    // The drain is measured; Finish Transaction is side work after it (its own bucket).
                                    ("finish_transactions", .bool(false)),
                                    ("rate_limits", .object([("transaction_info", limit)]))])),
            ("google_play", .object([("package_name", .string(RateOrders.packageName)),
                                     ("service_account_file", .string("play-service-account.json")),
                                     ("api_url", .string(stores.googleURL)), ("token_url", .string(stores.googleURL + "/token")),
                                     ("rate_limits", .object([("one_time_purchases", limit)]))])),
            ("user_binding", .object([("unsigned_proofs", .string("trust"))])),
            ("delivery", .object([("webhook", .object([("url", .string(stores.webhookURL)), ("secret_file", .string("webhook-secret"))]))])),
            ("schedule", .object([("concurrency", .number(options.concurrency))])),
            ("consumption", .object([("respond", .bool(true)), ("customer_consented", .bool(true))])),
        ])
        try folder.write("\(name).json", config.serialized(), mode: 0o644)
        return folder.path + "/\(name).json"
    }

    /// App Store orders with only their StoreKit 2 transaction id, and Play orders with their
    /// purchase token and the account id the purchase carries, all due now.
    private func dueLedger(name: String, now: Int64) throws -> String {
        let file = try folder.emptyLedger(name: name)
        let database = try BenchFolder.seedDatabase(file)
        try database.writeTransaction {
            for index in 0..<appleOrders {
                let id = RateOrders.appleOrderId(index)
                try database.query("""
                    INSERT INTO orders(order_id, user_id, product_id, transaction_id, next_attempt_at, created_at, updated_at)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
                    """, [.text(id), .text(RateOrders.user(index)), .text(BenchOrders.productId),
                          .text(RateOrders.appleTransactionId(index)), .integer(now)])
                try database.query("INSERT INTO history(order_id, at, kind, outcome) VALUES (?1, ?2, 'enqueue', 'enqueued')",
                                   [.text(id), .integer(now)])
            }
            for index in 0..<playOrders {
                let id = RateOrders.playOrderId(index)
                let bought = RateOrders.playPurchased(index, of: playOrders, now: now)
                try database.query("""
                    INSERT INTO orders(order_id, user_id, product_id, store, purchase_token, app_account_token, next_attempt_at,
                                       created_at, updated_at)
                    VALUES (?1, ?2, ?3, 'google_play', ?4, ?2, ?5, ?6, ?6)
                    """, [.text(id), .text(RateOrders.user(index)), .text(RateOrders.playProduct), .text(RateOrders.playToken(index)),
                          .integer(now), .integer(bought)])
                try database.query("INSERT INTO history(order_id, at, kind, outcome) VALUES (?1, ?2, 'enqueue', 'enqueued')",
                                   [.text(id), .integer(bought)])
            }
            // Refund requests about purchases granted before the outage (recorded as granted
            // outside settle), received almost 12 hours ago: each answer is due, its deadline
            // inside the drain.
            let received = now - 43_200 + RateOrders.consumptionDeadlineSeconds
            for index in 0..<RateOrders.consumptionRequests {
                let transaction = String(4_000_000_000 + index), uuid = "consumption-request-\(index)"
                try database.query("""
                    INSERT INTO notifications(uuid, type, environment, transaction_id, source, received_at, outcome, payload)
                    VALUES (?1, 'CONSUMPTION_REQUEST', 'Production', ?2, 'endpoint', ?3, 'answer_queued', '{}')
                    """, [.text(uuid), .text(transaction), .integer(received)])
                try database.query("""
                    INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at, note)
                    VALUES (?1, ?1, NULL, 'outside', ?2, 'granted before the outage')
                    """, [.text(transaction), .integer(received - 86_400)])
                try database.query("""
                    INSERT INTO consumption_answers(notification_uuid, transaction_id, environment, next_attempt_at, deadline_at, updated_at)
                    VALUES (?1, ?2, 'Production', ?3, ?4, ?3)
                    """, [.text(uuid), .text(transaction), .integer(received), .integer(received + 43_200)])
            }
        }
        return file
    }

    static func columns(_ a: String, _ b: String, _ c: String) -> String {
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count) }
        return pad(a, 52) + pad(b, 64) + c
    }
}
