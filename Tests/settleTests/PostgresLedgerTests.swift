import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleModel
import SettleLedger
@testable import SettleGooglePlayModule

/// The `settle` binary on a PostgreSQL ledger: configuration, migrate, enqueue, reconcile,
/// status, and two daemons sharing the work.
final class PostgresLedgerTests: EndToEndTestCase {
    var schema = ""
    var url = ""
    var daemons: [SettleBinary.Running] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        try world.writeConfig(schedule: [("interval_seconds", .number(1))], overrides: [("ledger", .string(url))])
    }

    override func tearDownWithError() throws {
        for daemon in daemons {
            daemon.send(SIGTERM)
            _ = daemon.wait()
        }
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    func testMigrateDryRun_thenMigrate_thenEnqueueReconcileAndStatus_allOnPostgreSQL() throws {
        let plan = try settle(expecting: 0, ["migrate", "--dry-run"])
        let target = PostgresLedgerSchema.migrations.count
        XCTAssertTrue(plan.stdout.contains("is at schema 0; settle migrate would apply migrations 1, "), plan.stdout)
        XCTAssertTrue(try settle(expecting: 0, ["migrate"]).stdout.contains("from schema 0 to \(target)"))
        XCTAssertTrue(try settle(expecting: 0, ["migrate", "--dry-run"]).stdout.contains("nothing to do"))
        try enqueue("o-1", transaction: "100", receipt: world.scriptReceipt("o-1", [purchase("100")]))
        try enqueue("o-2", transaction: "100", receipt: world.scriptReceipt("o-2", [purchase("100")]))
        try settle(expecting: 0, ["reconcile"])
        // Both orders name the one purchase; workers race for it and exactly one wins.
        XCTAssertEqual(world.deliveries.count, 1, "one purchase, granted once")
        let (winner, loser) = world.deliveries.first == "100 o-1" ? ("o-1", "o-2") : ("o-2", "o-1")
        let payload = try String(contentsOfFile: world.folder + "/payload-\(winner).json", encoding: .utf8)
        XCTAssertTrue(payload.contains("\"fencing_token\""), payload)
        let status = try settle(expecting: 0, ["status", "--json"])
        XCTAssertTrue(status.stdout.contains("\"workers\""), status.stdout)
        XCTAssertTrue(try settle(expecting: 0, ["status", loser]).stdout.contains("already_granted"))
        XCTAssertFalse(transcript.joined().contains(world.sharedSecret))
    }

    func testALedgerURLWithAPassword_isShownByCheckConfigAndMigrate_asLibpqReadsIt_withoutThePassword() throws {
        // The test cluster trusts local connections: libpq sends the password only if asked.
        try world.writeConfig(overrides: [("ledger", .string(url + "&password=pw-in-the-url"))])
        let check = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(check.stdout.contains("ledger: postgresql://"), check.stdout)
        XCTAssertTrue(check.stdout.contains("password=redacted"), check.stdout)
        let plan = try settle(expecting: 0, ["migrate", "--dry-run"])
        XCTAssertTrue(plan.stdout.hasPrefix("ledger postgresql://"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("password=redacted is at schema 0"), plan.stdout)
        XCTAssertTrue(try settle(expecting: 0, ["migrate"]).stdout.contains("password=redacted from schema 0 to "))
        XCTAssertFalse(transcript.joined().contains("pw-in-the-url"), transcript.joined())
    }

    func testALedgerURLWithAnSSLKeyPassword_isShownByCheckConfigAndMigrate_withoutIt() throws {
        // libpq reads sslpassword only to decrypt a client key, which the test cluster does not ask for.
        try world.writeConfig(overrides: [("ledger", .string(url + "&sslpassword=sslpw-in-the-url&password=pw-in-the-url"))])
        let check = try settle(expecting: 0, ["check-config"])
        XCTAssertTrue(check.stdout.contains("ledger: postgresql://"), check.stdout)
        XCTAssertTrue(check.stdout.contains("password=redacted") && check.stdout.contains("sslpassword=redacted"), check.stdout)
        let plan = try settle(expecting: 0, ["migrate", "--dry-run"])
        XCTAssertTrue(plan.stdout.contains("sslpassword=redacted"), plan.stdout)
        try settle(expecting: 0, ["migrate"])
        try settle(expecting: 0, ["status"])
        XCTAssertFalse(transcript.joined().contains("sslpw"), transcript.joined())
        XCTAssertFalse(transcript.joined().contains("pw-in-the-url"), transcript.joined())
    }

    func testLedgerObject_withAPasswordFileReadableByOthers_isRefusedLikeAnySecret() throws {
        _ = try world.write("pg-password", "not-used\n", mode: 0o644)
        try world.writeConfig(overrides: [("ledger", .object([("url", .string(url)), ("password_file", .string("pg-password"))]))])
        let result = try settle(["check-config"])
        XCTAssertEqual(result.status, 78, result.stderr)
        XCTAssertTrue(result.stderr.contains("ledger.password_file"), result.stderr)
    }

    func testTwoDaemonsOnOneLedger_shareTheWork_andGrantEachPurchaseOnce_andStatusListsBoth() throws {
        try settle(expecting: 0, ["migrate"])
        for i in 0..<40 {
            try enqueue("o-\(i)", transaction: "t-\(i % 20)", receipt: world.scriptReceipt("o-\(i)", [purchase("t-\(i % 20)")]))
        }
        for _ in 0..<2 {
            daemons.append(try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder))
        }
        XCTAssertTrue(eventually(within: 60) {
            let summary = try? PostgresLedger(url: url, access: .readOnly).summary(OrderFilter(limit: 0))
            return (summary?.counts[.finished] ?? 0) + (summary?.counts[.rejected] ?? 0) == 40
        }, "every order settled")
        XCTAssertEqual(world.deliveries.count, 20)
        XCTAssertEqual(Set(world.deliveries.map { $0.split(separator: " ")[0] }).count, 20, "no purchase granted twice")
        XCTAssertTrue(eventually(within: 10) {
            ((try? settle(["status"]))?.stdout ?? "").contains("workers: 2 live")
        }, (try? settle(["status"]))?.stdout ?? "")
    }

    /// Issue 32, item 22: 30 daemons killed with -9 and restarted on one host leave one live
    /// registration, so the host's pacer share is the whole rate, not a 31st of it.
    func testDaemonKilled30TimesAndRestarted_leavesOneLiveRegistration_andTheFullPacerShare() throws {
        try settle(expecting: 0, ["migrate"])
        func registered(_ pid: Int32) -> Bool {
            guard let connection = try? PostgresConnection(url: url) else { return false }
            defer { connection.close() }
            return ((try? connection.query("SELECT 1 AS n FROM daemons WHERE pid = $1", [.integer(Int64(pid))]))?.count ?? 0) == 1
        }
        for _ in 0..<30 {
            let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
            XCTAssertTrue(eventually(within: 20) { registered(daemon.pid) }, "the daemon registered")
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        let last = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(last)
        XCTAssertTrue(eventually(within: 20) { registered(last.pid) })
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        let unstopped = try connection.query("SELECT count(*) AS n FROM daemons WHERE stopped_at IS NULL").first?.int("n")
        XCTAssertEqual(unstopped, 1, "the restart replaced its killed predecessors' registrations")
        let ledger = try PostgresLedger(url: url, access: .readOnly)
        let live = try ledger.liveDaemons()
        XCTAssertEqual(live.map(\.owner.pid), [last.pid])
        XCTAssertEqual(try ledger.pacerHosts(besides: try XCTUnwrap(live.first).owner), 1, "the whole rate is this host's")
        XCTAssertTrue(eventually(within: 10) {
            ((try? settle(["status"]))?.stdout ?? "").contains("workers: 1 live")
        }, (try? settle(["status"]))?.stdout ?? "")
    }

    func testLedgerCopy_movesASQLiteLedgerIntoPostgreSQL_withMatchingCounts_andSettleCarriesOnThere() throws {
        let sqlite = try world.ledger()
        for i in 0..<3 {
            _ = try sqlite.enqueue(NewOrder(orderId: "o-\(i)", userId: "u-1", productId: world.coins, transactionId: "t-\(i)",
                                            receipt: world.scriptReceipt("o-\(i)", [purchase("t-\(i)")])))
        }
        _ = try world.reconciler(ledger: sqlite).runPass()
        XCTAssertEqual(try sqlite.recordOutsideGrant(transactionId: "t-9", grantKey: "t-9", note: "by hand"), .recorded)
        _ = try sqlite.enqueue(NewOrder(orderId: "o-late", userId: "u-1", productId: world.coins, transactionId: "t-late",
                                        receipt: world.scriptReceipt("o-late", [purchase("t-late")])))
        try sqlite.close()
        let copy = try settleWithoutConfig(["ledger", "copy", "--from", "sqlite:" + world.ledgerPath, "--to", url])
        XCTAssertEqual(copy.status, 0, copy.stderr)
        XCTAssertTrue(copy.stdout.contains("orders: 4 rows copied, counts match"), copy.stdout)
        XCTAssertTrue(copy.stdout.contains("grants: 4 rows copied"), copy.stdout)
        let analyzed = try PostgresLedger(url: url, access: .readOnly)
        XCTAssertEqual(try analyzed.read { db in try db.run("SELECT reltuples::bigint AS n FROM pg_class WHERE oid = 'orders'::regclass") }
                           .first?.int("n"), 4, "the copy leaves the planner the tables' statistics (ANALYZE)")
        try analyzed.close()
        XCTAssertEqual(try settleWithoutConfig(["ledger", "copy", "--from", "sqlite:" + world.ledgerPath, "--to", url]).status, 65,
                       "a second copy into a ledger with orders is refused")
        try settle(expecting: 0, ["reconcile"])
        let ledger = try PostgresLedger(url: url, access: .readOnly)
        XCTAssertEqual(try ledger.summary(OrderFilter(limit: 0)).counts[.finished], 4)
        XCTAssertEqual(try ledger.orderRecord("o-0")?.history.map(\.outcome), ["enqueued", "verified", "delivered"])
        XCTAssertEqual(try ledger.grantHolder(of: VerifiedPurchase(transactionId: "t-9", originalTransactionId: "t-9", productId: "",
                                                                   environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil)),
                       .outside(note: "by hand"))
    }

    func testLedgerCopy_ofALedgerThatUsedNotifications_carriesNotificationsRefundMarksRevokesAnswersAndTheCursor() throws {
        let sqlite = try world.ledger()
        _ = try sqlite.enqueue(NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, transactionId: "t-1",
                                        receipt: world.scriptReceipt("o-1", [purchase("t-1")])))
        _ = try sqlite.enqueue(NewOrder(orderId: "o-2", userId: "u-1", productId: world.coins, transactionId: "t-2",
                                        receipt: world.scriptReceipt("o-2", [purchase("t-2")])))
        _ = try world.reconciler(ledger: sqlite).runPass()
        try sqlite.close()
        // What App Store Server Notifications leave: stored notifications, a refund mark, a revoke
        // still owed, a refund-request answer owed, the history cursor and the history kind they write.
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        try database.execute("""
            INSERT INTO notifications(uuid, type, environment, transaction_id, order_id, source, received_at, outcome, payload)
            VALUES ('n-1', 'REFUND', 'Production', 't-1', 'o-1', 'endpoint', 1, 'revoke_queued', 'x'),
                   ('n-2', 'CONSUMPTION_REQUEST', 'Production', 't-2', 'o-2', 'endpoint', 2, 'answer_queued', 'y');
            UPDATE orders SET refunded_at = 1700000000, refund_kind = 'REFUND', refund_reason = '1' WHERE order_id = 'o-1';
            INSERT INTO revocations(transaction_id, order_id, kind, next_attempt_at, created_at, updated_at, round)
            VALUES ('t-1', 'o-1', 'REFUND', 1, 1, 1, 2);
            INSERT INTO consumption_answers(notification_uuid, transaction_id, environment, order_id, next_attempt_at, deadline_at, updated_at)
            VALUES ('n-2', 't-2', 'Production', 'o-2', 5, 43205, 2);
            INSERT INTO notification_cursor(environment, synced_until_ms, pagination_token, started_at_ms, updated_at, lease_owner, lease_expires_at)
            VALUES ('Production', 1699999000000, 'page-7', 1690000000000, 3, 'old-host 1 x', 99999999999);
            INSERT INTO history(order_id, at, kind, outcome, detail) VALUES ('o-1', 1, 'notification', 'revoke_queued', 'REFUND n-1');
            """)
        try database.close()
        let copy = try settleWithoutConfig(["ledger", "copy", "--from", "sqlite:" + world.ledgerPath, "--to", url])
        XCTAssertEqual(copy.status, 0, copy.stderr)
        for table in ["notifications: 2 rows", "revocations: 1 row", "consumption_answers: 1 row",
                      "notification_cursor: 1 row"] {
            XCTAssertTrue(copy.stdout.contains("\(table) copied, counts match"), copy.stdout)
        }
        let ledger = try PostgresLedger(url: url, access: .current)
        let copied = try XCTUnwrap(try ledger.orderRecord("o-1"))
        XCTAssertEqual(copied.order.refund?.at, 1_700_000_000, "the refund mark came along")
        XCTAssertEqual(copied.order.refund?.kind, "REFUND")
        XCTAssertEqual(copied.order.refund?.reason, "1")
        XCTAssertEqual(copied.order.state, .finished, "states are copied as they are, not forced to pending")
        XCTAssertEqual(copied.history.last?.kind, .notification)
        XCTAssertNil(try ledger.orderRecord("o-2")?.order.refund)
        XCTAssertEqual(try ledger.notification(uuid: "n-1")?.outcome, "revoke_queued")
        XCTAssertEqual(try ledger.notifications(orderId: "o-2").map(\.uuid), ["n-2"])
        let revoke = try XCTUnwrap(try ledger.revocation(orderId: "o-1"))
        XCTAssertEqual(revoke.state, "pending", "the revoke still owed is owed on PostgreSQL")
        XCTAssertEqual(revoke.job.round, 2)
        let cursor = try ledger.notificationCursor(environment: .production)
        XCTAssertEqual(cursor.syncedUntilMs, 1_699_999_000_000)
        XCTAssertEqual(cursor.paginationToken, "page-7")
        XCTAssertEqual(cursor.startedAtMs, 1_690_000_000_000)
        XCTAssertNotNil(try ledger.claimNotificationHistory(environment: .production, owner: "new-host", leaseSeconds: 60),
                        "the old host's lease does not come along")
        let answers = try ledger.claimDueConsumptionAnswers(limit: 10, leaseSeconds: 60)
        XCTAssertEqual(answers.map(\.0.notificationUUID), ["n-2"], "the answer still owed is owed on PostgreSQL")
        XCTAssertEqual(answers.first?.0.deadlineAt, 43205)
    }

    func testLedgerCopy_ofALedgerWithGooglePlayOrders_carriesTheirStoreTokenDeliveryMarkPushesAndTheVoidedCursor() throws {
        let sqlite = try world.ledger()
        let token = try XCTUnwrap(PurchaseToken("tok-copy-AO-J1OxYz.SECRET"))
        _ = try sqlite.enqueue(NewOrder(orderId: "p-1", userId: "u-1", productId: "gems_100", appAccountToken: "u-1",
                                        store: .googlePlay, purchaseToken: token))
        XCTAssertTrue(try sqlite.storePlayNotification(messageId: "m-1", kind: "oneTimeProductNotification", token: token, payload: "{}"))
        try sqlite.savePlayVoidedCursor(PlayVoidedCursor(sinceMs: 1_700_000_000_000, pageToken: "page-3", polledAt: 7))
        try sqlite.close()
        let copy = try settleWithoutConfig(["ledger", "copy", "--from", "sqlite:" + world.ledgerPath, "--to", url])
        XCTAssertEqual(copy.status, 0, copy.stderr)
        for table in ["play_notifications: 1 row", "play_cursor: 1 row"] {
            XCTAssertTrue(copy.stdout.contains("\(table) copied, counts match"), copy.stdout)
        }
        let ledger = try PostgresLedger(url: url, access: .readOnly)
        let copied = try XCTUnwrap(try ledger.orderRecord("p-1")).order
        XCTAssertEqual(copied.store, .googlePlay)
        XCTAssertEqual(copied.purchaseToken, token)
        XCTAssertEqual(try ledger.playNotification(messageId: "m-1")?.kind, "oneTimeProductNotification")
        XCTAssertEqual(try ledger.playVoidedCursor(), PlayVoidedCursor(sinceMs: 1_700_000_000_000, pageToken: "page-3", polledAt: 7))
        XCTAssertFalse(copy.stdout.contains(token.value), "the purchase token is never printed")
    }

    func testTheDocumentedBackendRole_insertsOnlyItsColumns_andItsRowsArePending() throws {
        try settle(expecting: 0, ["migrate"])
        let role = "backend_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let admin = try PostgresConnection(url: url)
        defer {
            try? admin.execute("RESET ROLE; DROP OWNED BY \(role); DROP ROLE IF EXISTS \(role)")
            admin.close()
        }
        // The documented grants (docs/postgresql.md, "Roles and grants"), for this test's schema.
        try admin.execute("""
            CREATE ROLE \(role);
            GRANT USAGE ON SCHEMA \(schema) TO \(role);
            GRANT SELECT ON receipts, orders, history, grants TO \(role);
            GRANT INSERT (sha256, data) ON receipts TO \(role);
            GRANT INSERT (order_id, user_id, product_id, transaction_id, receipt_sha256, signed_transaction, app_account_token)
                ON orders TO \(role);
            """)
        try admin.execute("SET ROLE \(role)")
        XCTAssertThrowsError(try admin.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, lease_host, lease_pid, lease_start, lease_expires_at,
                               verified_transaction_id, grant_key)
            VALUES ('forged', 'u-1', '\(world.coins)', '900', 'delivering', 'gone', 1, 'x', 0, '900', '900')
            """)) { error in
            XCTAssertTrue("\(error)".contains("permission denied"), "\(error)")
        }
        try admin.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-1', 'u-1', '\(world.coins)', '901')
            """)
        try admin.execute("RESET ROLE")
        // Even a role granted INSERT on the whole table cannot put a row anywhere but pending.
        try admin.execute("GRANT INSERT ON orders TO \(role); SET ROLE \(role)")
        try admin.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, lease_host, lease_pid, lease_start, lease_expires_at,
                               verified_transaction_id, original_transaction_id, grant_key, finished_at)
            VALUES ('forged', 'u-1', '\(world.coins)', '900', 'finished', 'gone', 1, 'x', 0, '900', '900', '900', 1)
            """)
        try admin.execute("RESET ROLE")
        let ledger = try PostgresLedger(url: url, access: .readOnly)
        for id in ["o-1", "forged"] {
            let order = try XCTUnwrap(try ledger.orderRecord(id)?.order, id)
            XCTAssertEqual(order.state, .pending, id)
            XCTAssertNil(order.verified, id)
            XCTAssertNil(order.lease, id)
        }
    }
}
