import Foundation
import XCTest
import SettleBase
import SettleLedger
import SettleModel
import SettleTesting
import SettleHuawei
import SettleHuaweiSimulator
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of `settle run` at random instants while 200 Huawei orders are delivered, then: no
/// order lost, no purchase order granted twice, none granted and never confirmed as shipped (an
/// unconfirmed consumable cannot be bought again), and no confirm before its grant (issue 34).
/// The hook is the README's idempotent one. `SETTLE_FAULT_SEED=<seed>` replays the kill instants.
class HuaweiCrashFaultTestCase: HuaweiTestCase {
    var ledgerConfig: [(String, JSONValue)] { [] }
    var engine: String { "SQLite" }

    var alreadyGrantedPath: String { world.folder + "/already-granted.log" }

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

    func workedOn(_ ledger: any SettleLedger) throws -> Int {
        let sql = "SELECT count(*) AS n FROM orders WHERE state IN ('pending', 'verifying', 'delivering')"
        return Int(try ledger.reading { try $0.query(sql).first?.int("n") } ?? -1)
    }

    func startRun() throws -> SettleBinary.Running {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], workingDirectory: world.folder,
                                            outputFolder: world.folder)
        daemons.append(daemon)
        return daemon
    }

    func runKillNineWhileDelivering(orders count: Int, kills: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let started = Date()
        let seed = ProcessInfo.processInfo.environment["SETTLE_FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        print("HuaweiCrashFault (\(engine)): seed \(seed); replay with SETTLE_FAULT_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        try writeHuaweiConfig(hook: try writeIdempotentHook(), extra: ledgerConfig + [
            ("schedule", .object([("interval_seconds", .number(1)), ("concurrency", .number(4)), ("max_attempts", .number(3)),
                                  ("backoff_base_seconds", .number(30)), ("backoff_max_seconds", .number(3600))])),
        ])
        // Two consumables in four, a non-consumable, a subscription; one buyer each.
        var orders: [(orderId: String, key: String, user: String, product: String)] = []
        for i in 0..<count {
            let key = "1800.K.\(1000 + i)", user = "u-\(i)"
            switch i % 4 {
            case 0, 1: scriptOrder(key, user: user); orders.append(("o-\(i)", key, user, coins))
            case 2: scriptOrder(key, product: unlock, type: "1", user: user); orders.append(("o-\(i)", key, user, unlock))
            default:
                let order = scriptOrder(key, product: vip, type: "2", user: user)
                fake.script(subscription: FakeHuawei.Subscription(subscriptionId: "SUB.\(i)", purchaseToken: token(key), status: "1",
                                                                  expiresTimeMs: (world.time.unixSeconds + 86_400) * 1000, orders: [order]))
                orders.append(("o-\(i)", key, user, vip))
            }
        }
        let ledger = try world.configuration().openLedger(.migrating, time: world.time)
        defer { try? ledger.close() }
        for o in orders {
            var order = NewOrder(orderId: o.orderId, userId: o.user, productId: o.product, store: .huawei)
            order.storeProof = HuaweiProof(purchaseOrderId: o.key, purchaseToken: token(o.key)).storeProof
            _ = try ledger.enqueue(order)
        }

        let thresholds = (0..<kills).map { _ in Int.random(in: 0..<count, using: &random) }.sorted()
        var killedMidWork = 0
        for threshold in thresholds {
            let delay = UInt32.random(in: 0..<40_000, using: &random)
            let daemon = try startRun()
            _ = eventually(within: 30) { world.deliveries.count >= threshold || !daemon.isRunning }
            usleep(delay)
            let open = try workedOn(ledger)
            daemon.send(SIGKILL)
            let result = daemon.wait()
            XCTAssertTrue(daemon.wasKilledBySignal, "settle run ended by itself (\(result.status)): " + result.stderr.suffix(3000),
                          file: file, line: line)
            if open > 0 { killedMidWork += 1 }
        }
        let last = try startRun()
        let settled = eventually(within: 60) {
            !last.isRunning || ((try? workedOn(ledger)) == 0
                && ((try? String(contentsOfFile: last.stderrPath, encoding: .utf8)) ?? "").contains("pass.finished"))
        }
        last.send(SIGTERM)
        let lastRun = last.wait()
        XCTAssertTrue(settled, "orders still worked on a minute after the last start", file: file, line: line)
        XCTAssertEqual(lastRun.status, 0, "the last settle run did not stop cleanly: " + lastRun.stderr.suffix(3000), file: file, line: line)

        let states = try ledger.reading { db in
            try db.query("SELECT order_id, state, reason FROM orders").map { "\($0.string("order_id") ?? "") \($0.string("state") ?? "") \($0.string("reason") ?? "")" }
        }
        let notFinished = states.filter { !$0.contains(" finished ") }
        let grants = world.deliveries.map { $0.split(separator: " ").map(String.init) }
        let grantedKeys = grants.map { $0[0] }
        let grantedTwice = Dictionary(grouping: grantedKeys, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        let byKey = Dictionary(uniqueKeysWithValues: orders.map { ($0.key, $0.orderId) })
        let strays = grants.filter { byKey[$0[0]] != $0.last }.map { $0.joined(separator: " ") }
        let neverGranted = orders.filter { !grantedKeys.contains($0.key) }.map(\.orderId)
        XCTAssertEqual(notFinished, [], "orders not finished", file: file, line: line)
        XCTAssertEqual(grantedTwice, [], "purchase orders granted twice", file: file, line: line)
        XCTAssertEqual(strays, [], "grants of no purchase, or to another order", file: file, line: line)
        XCTAssertEqual(neverGranted, [], "orders never granted", file: file, line: line)
        let confirmed = Set(fake.confirmed)
        let unconfirmed = orders.filter { grantedKeys.contains($0.key) && !confirmed.contains($0.key) }.map(\.orderId)
        XCTAssertEqual(unconfirmed, [], "granted but never confirmed as shipped", file: file, line: line)
        let early = tap.confirms.withLock { $0 }.filter { confirm in
            (grantedKeys.firstIndex(of: confirm.orderId).map { $0 >= confirm.deliveriesSoFar }) ?? true
        }.map { "\($0.orderId) with \($0.deliveriesSoFar) grants made" }
        XCTAssertEqual(early, [], "confirmed before the grant", file: file, line: line)
        func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        let outputs = try FileManager.default.contentsOfDirectory(atPath: world.folder).filter { $0.hasPrefix("settle-") }
            .map { text(world.folder + "/" + $0) }
        XCTAssertFalse((outputs + transcript).contains { $0.contains("SECRETHUAWEITOKEN") }, "a purchase token was printed",
                       file: file, line: line)
        print("""
            HuaweiCrashFault (\(engine)): seed \(seed); \(count) orders; \(kills) kills (\(killedMidWork) with orders open); \
            lost \(Set(neverGranted).union(notFinished).count); granted twice \(grantedTwice.count); granted not confirmed \
            \(unconfirmed.count); confirmed before grant \(early.count); re-deliveries answered already-granted \
            \(text(alreadyGrantedPath).split(separator: "\n").count); confirms \(tap.confirms.withLock { $0.count }); \
            \(String(format: "%.1f", Date().timeIntervalSince(started))) s
            """)
        XCTAssertGreaterThan(killedMidWork, 0, "no kill landed while orders were open", file: file, line: line)
    }
}

final class HuaweiCrashFaultTests: HuaweiCrashFaultTestCase {
    func testKill9OfSettleRunAtRandomInstants_while200HuaweiOrdersAreDelivered_losesNone_grantsOnce_confirmsAfterTheGrant() throws {
        try runKillNineWhileDelivering(orders: 200, kills: 20)
    }
}

/// The same on a PostgreSQL ledger.
final class HuaweiCrashFaultPostgresTests: HuaweiCrashFaultTestCase {
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

    func testKill9OfSettleRunAtRandomInstants_onPostgreSQL_losesNone_grantsOnce_confirmsAfterTheGrant() throws {
        try runKillNineWhileDelivering(orders: 200, kills: 20)
    }
}
