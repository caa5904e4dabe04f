import Foundation
import SettleApp
import SettleBase
import SettleGooglePlay
import SettleLedger
import SettleModel
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of `settle run` at random instants while Google Play orders are delivered, then:
/// no order lost, no key granted twice, no purchase granted but left unacknowledged (Google
/// refunds it after three days while the customer keeps the goods), and no acknowledge or
/// consume before its grant (issue 23). The hook is the README's idempotent one, on a file.
///
/// The kill instants come from a seed printed first; `SETTLE_FAULT_SEED=<seed>` replays them
/// (how they fall among the hooks still varies, as a real crash's would).
class PlayCrashFaultTestCase: GooglePlayTestCase {
    enum Kind: CaseIterable { case consumable, nonConsumable, subscription }

    /// One Play purchase of the run and the order a backend enqueued for it.
    struct Purchase {
        var orderId: String
        var userId: String
        var kind: Kind
        var productId: String
        var token: String
        /// Google's order id: the grant key and the hook's idempotency key.
        var key: String
        /// Whether Google has to hear `:consume` (consumables) rather than `:acknowledge`.
        var consumed: Bool { kind == .consumable }
    }

    nonisolated(unsafe) var daemons: [SettleBinary.Running] = []

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        try super.tearDownWithError()
    }

    /// Ledger settings on top of the Play configuration (the PostgreSQL variant's URL).
    var ledgerConfig: [(String, JSONValue)] { [] }
    var engine: String { "SQLite" }

    /// Half consumables, a quarter non-consumables, a quarter subscriptions; one buyer each.
    func scriptPurchases(_ count: Int) -> [Purchase] {
        (0..<count).map { i in
            let kind: Kind = i % 4 < 2 ? .consumable : i % 4 == 2 ? .nonConsumable : .subscription
            let user = "u-\(i)"
            let name = "crash-\(i)"
            switch kind {
            case .consumable, .nonConsumable:
                let product = kind == .consumable ? gems : unlock
                let key = "GPA.3300-0000-\(1000 + i)"
                return Purchase(orderId: "o-\(i)", userId: user, kind: kind, productId: product,
                                token: scriptProduct(name, product: product, orderId: key, account: user), key: key)
            case .subscription:
                let key = "GPA.3300-0000-\(1000 + i)..0"
                let token = token(name)
                fake.script(subscription: token, SubscriptionPurchaseV2(
                    rawSubscriptionState: "SUBSCRIPTION_STATE_ACTIVE",
                    lineItems: [.init(productId: pro, expiryTime: "2099-01-01T00:00:00Z",
                                      latestSuccessfulOrderId: key)],
                    latestOrderId: key, obfuscatedExternalAccountId: user, startTime: "2026-12-01T10:00:00Z"))
                return Purchase(orderId: "o-\(i)", userId: user, kind: kind, productId: pro, token: token, key: key)
            }
        }
    }

    /// The README's idempotent hook on a file: grant once per idempotency key, exit 80 for a key
    /// granted before. flock makes check-and-record one step for hooks running side by side
    /// (and for a hook a killed settle left running beside the next settle's). Grants are
    /// appended to the world's deliveries file, so the tap's count of it at an acknowledge is
    /// how many grants had been made then, in order.
    func writeIdempotentHook() throws -> String {
        try world.write("idempotent-grant.sh", """
            #!/bin/sh
            cat > /dev/null
            exec 9>> "\(world.folder)/grants.lock"
            flock 9
            if cut -d ' ' -f 1 "\(world.deliveriesPath)" 2>/dev/null | grep -qxF "$SETTLE_IDEMPOTENCY_KEY"; then
                echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(alreadyGrantedPath)"
                exit 80
            fi
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(world.deliveriesPath)"
            exit 0
            """, mode: 0o755)
    }

    var alreadyGrantedPath: String { world.folder + "/already-granted.log" }

    /// Orders settle still works on (not finished, rejected or set aside for a person), read
    /// from the ledger the daemon writes.
    func workedOn(_ ledger: any SettleLedger) throws -> Int {
        let sql = "SELECT count(*) AS n FROM orders WHERE state IN ('pending', 'verifying', 'delivering')"
        return Int(try ledger.reading { try $0.query(sql).first?.int("n") } ?? -1)
    }

    func startDaemon() throws -> SettleBinary.Running {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], workingDirectory: world.folder,
                                            outputFolder: world.folder)
        daemons.append(daemon)
        return daemon
    }

    /// Enqueues `count` Play orders, kills `settle run` `kills` times while it delivers them,
    /// lets a last `settle run` finish, and checks the ledger, the hook's grants and Google.
    func runKillNineWhileDelivering(orders count: Int, kills: Int,
                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let started = Date()
        let seed = ProcessInfo.processInfo.environment["SETTLE_FAULT_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("PlayCrashFault (\(engine)): seed \(seed); replay with SETTLE_FAULT_SEED=\(seed)")
        var random = SplitMix64(seed: seed)

        try writePlayConfig(hook: try writeIdempotentHook(), extra: ledgerConfig + [
            ("schedule", .object([("interval_seconds", .number(1)), ("concurrency", .number(4)),
                                  ("max_attempts", .number(3)), ("backoff_base_seconds", .number(30)),
                                  ("backoff_max_seconds", .number(3600))])),
        ])
        let purchases = scriptPurchases(count)
        let ledger = try world.configuration().openLedger(.migrating, time: world.time)
        defer { try? ledger.close() }
        for p in purchases {
            _ = try ledger.enqueue(NewOrder(orderId: p.orderId, userId: p.userId, productId: p.productId,
                                            store: .googlePlay, purchaseToken: PurchaseToken(p.token)))
        }

        // Each kill waits for a random number of grants (sorted, so the kills spread over the
        // whole run; one already passed kills the next daemon during its start or rescue),
        // then a random few milliseconds more, to land anywhere between a hook and Google.
        let thresholds = (0..<kills).map { _ in Int.random(in: 0..<count, using: &random) }.sorted()
        var killedMidWork = 0
        for threshold in thresholds {
            let delay = UInt32.random(in: 0..<40_000, using: &random)
            let daemon = try startDaemon()
            _ = eventually(within: 30) { world.deliveries.count >= threshold || !daemon.isRunning }
            usleep(delay)
            let open = try workedOn(ledger)
            daemon.send(SIGKILL)
            let result = daemon.wait()
            XCTAssertTrue(daemon.wasKilledBySignal, "settle run ended by itself (\(result.status)) before its kill: "
                          + result.stderr.suffix(3000), file: file, line: line)
            if open > 0 { killedMidWork += 1 }
        }

        // The last one runs until nothing is left to work on and its own pass ended (so its
        // SIGTERM handler is in place), then stops gracefully.
        let last = try startDaemon()
        let settled = eventually(within: 60) {
            !last.isRunning || ((try? workedOn(ledger)) == 0
                && ((try? String(contentsOfFile: last.stderrPath, encoding: .utf8)) ?? "").contains("pass.finished"))
        }
        last.send(SIGTERM)
        let lastRun = last.wait()
        XCTAssertTrue(settled, "orders still worked on a minute after the last start", file: file, line: line)
        XCTAssertEqual(lastRun.status, 0, "the last settle run did not stop cleanly: " + lastRun.stderr.suffix(3000),
                       file: file, line: line)

        let notFinished = try ordersNotFinished(count, file: file, line: line)
        let grants = world.deliveries.map { $0.split(separator: " ").map(String.init) }
        let grantedKeys = grants.map { $0[0] }
        let grantedTwice = Dictionary(grouping: grantedKeys, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        let byKey = Dictionary(uniqueKeysWithValues: purchases.map { ($0.key, $0) })
        let strays = grants.filter { byKey[$0[0]]?.orderId != $0.last }.map { $0.joined(separator: " ") }
        let neverGranted = purchases.filter { !grantedKeys.contains($0.key) }.map(\.orderId)
        let lost = Set(neverGranted).union(notFinished.keys)
        XCTAssertEqual(grantedTwice, [], "keys granted twice", file: file, line: line)
        XCTAssertEqual(strays, [], "grants of no purchase's key, or to another order", file: file, line: line)
        XCTAssertEqual(neverGranted, [], "orders never granted", file: file, line: line)
        let ledgerKeys = try ledger.reading { db in
            try db.query("SELECT grant_key FROM grants ORDER BY grant_key").compactMap { $0.string("grant_key") }
        }
        XCTAssertEqual(ledgerKeys, purchases.map(\.key).sorted(), "the ledger's grants are not one per purchase",
                       file: file, line: line)

        let untold = purchases.filter { grantedKeys.contains($0.key) && !googleWasTold($0) }.map(\.orderId)
        XCTAssertEqual(untold, [], "granted but never acknowledged or consumed with Google", file: file, line: line)
        let (early, wrongCall) = finishCallsBeforeTheirGrant(purchases, grantedKeys: grantedKeys)
        XCTAssertEqual(early, [], "Google told before the grant", file: file, line: line)
        XCTAssertEqual(wrongCall, [], "consume for a non-consumable or acknowledge for a consumable",
                       file: file, line: line)

        // A token is a bearer secret: none in anything a settle process printed.
        func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        let outputs = try FileManager.default.contentsOfDirectory(atPath: world.folder).filter { $0.hasPrefix("settle-") }
            .map { text(world.folder + "/" + $0) }
        let printed = outputs + [everything]
        XCTAssertFalse(printed.contains { $0.contains("SECRETPLAYTOKEN") }, "a purchase token was printed",
                       file: file, line: line)

        let redelivered = text(alreadyGrantedPath).split(separator: "\n").count
        func of(_ kind: Kind) -> Int { purchases.filter { $0.kind == kind }.count }
        print("""
            PlayCrashFault (\(engine)): seed \(seed); \(count) orders (\(of(.consumable)) consumables, \
            \(of(.nonConsumable)) non-consumables, \(of(.subscription)) subscriptions); \
            \(kills) kills (\(killedMidWork) with orders open); lost \(lost.count); \
            granted twice \(grantedTwice.count); \
            granted not acknowledged/consumed \(untold.count); acknowledged before grant \(early.count); \
            re-deliveries answered already-granted \(redelivered); acknowledge/consume calls \(finishes.count); \
            \(String(format: "%.1f", Date().timeIntervalSince(started))) s
            """)
        XCTAssertGreaterThan(killedMidWork, 0, "no kill landed while orders were open", file: file, line: line)
    }

    /// Every order not finished, by the ledger's own account (`settle status --json`): id -> "state reason".
    func ordersNotFinished(_ count: Int, file: StaticString, line: UInt) throws -> [String: String] {
        let status = try statusJSON(file: file, line: line)
        var notFinished: [String: String] = [:]
        for state in ["pending", "verifying", "delivering", "rejected", "needs_attention"]
        where (status["counts"]?[state]?.looseInt64 ?? 0) > 0 {
            let listed = try statusJSON(["--state", state, "--limit", "1000"], file: file, line: line)
            for order in listed["orders"]?.arrayValue ?? [] {
                notFinished[order["order_id"]?.looseString ?? "?"] = "\(state) \(order["reason"]?.looseString ?? "")"
            }
        }
        XCTAssertEqual(status["counts"]?["finished"]?.looseInt64, Int64(count), "not finished: \(notFinished)",
                       file: file, line: line)
        return notFinished
    }

    /// Whether the fake Google holds the purchase consumed (a consumable) or acknowledged.
    func googleWasTold(_ p: Purchase) -> Bool {
        switch p.kind {
        case .consumable: return fake.product(p.token)?.consumptionState == .consumed
        case .nonConsumable: return fake.product(p.token)?.acknowledgementState == .acknowledged
        case .subscription: return fake.subscription(p.token)?.acknowledgementState == .acknowledged
        }
    }

    /// Each acknowledge or consume Google got for a purchase whose key was not among the grants
    /// made at that moment (the first `deliveriesSoFar` lines of the append-only grants log),
    /// and each of the wrong kind (consume of a non-consumable, acknowledge of a consumable).
    func finishCallsBeforeTheirGrant(_ purchases: [Purchase],
                                     grantedKeys: [String]) -> (early: [String], wrong: [String]) {
        let byToken = Dictionary(uniqueKeysWithValues: purchases.map { ($0.token, $0) })
        var early: [String] = [], wrong: [String] = []
        for call in finishes {
            let last = call.path.split(separator: "/").last.map(String.init) ?? ""
            let verb = last.split(separator: ":").last.map(String.init) ?? ""
            let token = String(last.dropLast(verb.count + 1)).removingPercentEncoding
            guard let p = token.flatMap({ byToken[$0] }) else {
                wrong.append("a \(verb) of a token no order holds")
                continue
            }
            if (verb == "consume") != p.consumed { wrong.append("\(p.orderId) \(verb)") }
            let position = grantedKeys.firstIndex(of: p.key)
            if position.map({ $0 >= call.deliveriesSoFar }) ?? true {
                early.append("\(p.orderId) \(verb) with \(call.deliveriesSoFar) grants made, its own "
                             + (position.map { "#\($0 + 1)" } ?? "never"))
            }
        }
        return (early, wrong)
    }
}

final class PlayCrashFaultTests: PlayCrashFaultTestCase {
    func testKill9OfSettleRunAtRandomInstants_whilePlayOrdersAreDelivered_losesNone_grantsOnce_andTellsGoogleOnlyAfterTheGrant() throws {
        try runKillNineWhileDelivering(orders: 100, kills: 20)
    }
}

/// The same on a PostgreSQL ledger: its claims, leases and fencing tokens instead of SQLite's.
final class PlayCrashFaultPostgresTests: PlayCrashFaultTestCase {
    var url = ""
    var schema = ""
    override var ledgerConfig: [(String, JSONValue)] { [("ledger", .string(url))] }
    override var engine: String { "PostgreSQL" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        (url, schema) = try TestPostgres.freshSchema()
    }

    override func tearDownWithError() throws {
        try super.tearDownWithError()
        TestPostgres.drop(schema: schema)
    }

    func testKill9OfSettleRunAtRandomInstants_onPostgreSQL_losesNone_grantsOnce_andTellsGoogleOnlyAfterTheGrant() throws {
        try runKillNineWhileDelivering(orders: 100, kills: 20)
    }
}
