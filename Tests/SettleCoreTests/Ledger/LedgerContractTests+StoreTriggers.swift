import XCTest
@testable import SettleModel
@testable import SettleLedger

/// The one trigger written for one store (an App Store order that ends `finished` queues Apple's
/// Finish Transaction) is the App Store module's own named migration, on both engines: the
/// core's trigger of migration 13 (PostgreSQL 9) is gone, and the module's does its work.
extension LedgerContractTests {
    func testTheFinishQueueTrigger_isTheAppStoreModules_andQueuesAFinishedOrder() throws {
        try onEachBackEnd { b in
            let ledger = try XCTUnwrap(b.store as? any TransactionalLedger, b.name)
            XCTAssertTrue(try ledger.hasMigration("app_store.finish_queue"), b.name)
            let triggers = try ledger.reading { db in
                // This ledger's schema only: the test database holds other tests' schemas (another
                // test's old schema, mid-migration, may still carry the core's trigger).
                try db.query(b.store.isShared ? """
                    SELECT tgname AS name FROM pg_trigger JOIN pg_class ON pg_class.oid = tgrelid
                    WHERE NOT tgisinternal AND relnamespace = current_schema()::regnamespace
                    """ : "SELECT name FROM sqlite_schema WHERE type = 'trigger'").compactMap { $0.string("name") }
            }
            XCTAssertTrue(triggers.contains("app_store_finish_queue"), "\(b.name): \(triggers)")
            XCTAssertFalse(triggers.contains("orders_apple_finish"), "\(b.name): \(triggers)")

            try enqueue(b.store, "o-1")
            let claimed = try XCTUnwrap(try b.store.claimNextDue(owner: me, leaseSeconds: 60), b.name)
            _ = try b.store.recordVerified(orderId: "o-1", owner: me, fence: claimed.fencingToken, match: .only(purchase("100")),
                                           deliveryLeaseSeconds: 60, history: entry)
            XCTAssertTrue(try b.store.markFinished(orderId: "o-1", owner: me, fence: claimed.fencingToken, history: entry), b.name)
            let queued = try ledger.reading { db in
                try db.query("SELECT order_id FROM apple_finishes WHERE transaction_id = '100'").compactMap { $0.string("order_id") }
            }
            XCTAssertEqual(queued, ["o-1"], b.name)
        }
    }
}
