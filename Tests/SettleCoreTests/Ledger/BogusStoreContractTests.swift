import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleSimulator
@testable import SettleAppStoreSimulator

/// The bogus store (SettleTesting) through the whole core, on both engines: a store the core
/// has never heard of settles, waits out its own outage without holding the others, and shows
/// its refund clock, with no line of the core naming it.
extension LedgerContractTests {
    private func bogusOrder(_ b: LedgerBackEnd, _ id: String, transaction: String, user: String = "u-1") throws {
        var order = NewOrder(orderId: id, userId: user, productId: world.coins, store: .bogus)
        order.storeProof = BogusStoreAdapter.proof(sale: transaction)
        _ = try b.store.enqueue(order)
    }

    private func reconciler(_ b: LedgerBackEnd, log: Log = .silent) throws -> Reconciler {
        try Reconciler.configured(try world.configuration(), ledger: b.store, environment: [:], log: log, modules: TestStores.modules)
    }

    func testABogusStoreOrder_settlesThroughThePass_andItsStoreIsToldOnce_onBothEngines() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("bogus-ok-\(b.name).sh", exit: 0))
            shop.sell("\(b.name)-B1", productId: world.coins, to: "u-1")
            try bogusOrder(b, "b-1", transaction: "\(b.name)-B1")
            let report = try reconciler(b).runPass()
            XCTAssertEqual(report.finished, 1, b.name)
            let order = try XCTUnwrap(try b.store.orderRecord("b-1")?.order, b.name)
            XCTAssertEqual(order.state, .finished, b.name)
            XCTAssertEqual(order.store, .bogus, b.name)
            XCTAssertEqual(order.verified?.transactionId, "\(b.name)-B1", b.name)
            XCTAssertEqual(world.deliveries.filter { $0.hasPrefix("\(b.name)-B1") }, ["\(b.name)-B1 b-1"], b.name)
            XCTAssertEqual(shop.sale("\(b.name)-B1")?.acknowledged, true, "\(b.name): the store was told of the delivery")
            XCTAssertEqual(try b.store.summary(OrderFilter(limit: 0)).storeCounts[.bogus]?[.finished], 1, b.name)
            XCTAssertEqual(order.storeProof, BogusStoreAdapter.proof(sale: "\(b.name)-B1"), "\(b.name): the proof reads back as written")
            XCTAssertEqual(order.proof?.kind, "bogus_sale", b.name)
            XCTAssertTrue(try b.store.hasMigration("bogus.sales_seen"), "\(b.name): the module's named migration was applied")
            XCTAssertEqual(try BogusStoreAdapter.salesSeen(b.store), ["\(b.name)-B1": "b-1"], "\(b.name): its own table, in use")
            let reopened = try b.another()
            XCTAssertTrue(try reopened.hasMigration("bogus.sales_seen"), "\(b.name): reopening applies nothing twice")
            XCTAssertFalse(try reopened.hasMigration("bogus.never_registered"), b.name)
            let shown = StatusView.json(try b.store.summary(OrderFilter(limit: 10))).serialized(pretty: false)
            XCTAssertFalse(shown.contains("sale:"), "\(b.name): status never shows a module's proof")
            _ = try reconciler(b).runPass()
            XCTAssertEqual(world.deliveries.filter { $0.hasPrefix("\(b.name)-B1") }.count, 1, "\(b.name): granted once")
            XCTAssertEqual(shop.acknowledgements, 1, "\(b.name): told once")
        }
    }

    func testABogusStoreOutage_holdsOnlyItsOwnOrders_andItsRefundClockShows_onBothEngines() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("bogus-outage-\(b.name).sh", exit: 0))
            shop.sell("\(b.name)-B2", productId: world.coins, to: "u-1")
            shop.setDown(true)
            try bogusOrder(b, "b-2", transaction: "\(b.name)-B2")
            let receipt = world.scriptReceipt("\(b.name)-a", [SimulatedTransaction(productId: world.coins, transactionId: "\(b.name)-A2")])
            _ = try b.store.enqueue(NewOrder(orderId: "a-2", userId: "u-1", productId: world.coins, transactionId: "\(b.name)-A2",
                                             receipt: receipt))
            _ = try reconciler(b).runPass()
            XCTAssertEqual(try state(b.store, "a-2"), .finished, "\(b.name): the App Store order is not held by the bogus store's outage")
            let waiting = try XCTUnwrap(try b.store.orderRecord("b-2")?.order, b.name)
            XCTAssertEqual(waiting.state, .pending, b.name)
            XCTAssertEqual(waiting.attempts, 0, "\(b.name): a store's outage uses none of its orders' attempts")
            XCTAssertEqual(try b.store.breakers()[.bogus]?.lastError, "the bogus store is down", b.name)
            let clocks = try b.store.refundDeadlines(limit: 20)
            XCTAssertEqual(clocks.map(\.orderId), ["b-2"], b.name)
            XCTAssertEqual(clocks.first?.store, .bogus, b.name)
            let status = StatusView.json(try b.store.summary(OrderFilter(limit: 0)))
            XCTAssertEqual(status["bogus"]?["unacknowledged"]?.arrayValue?.count, 1, "\(b.name): \(status)")
            XCTAssertEqual(StatusView.deadlineText(try XCTUnwrap(clocks.first), now: world.time.unixSeconds).contains("Bogus refunds it in"), true)
            shop.setDown(false)
            world.time.advance(by: 3600)
            try b.store.saveBreaker(StoreBreaker(), of: .bogus)
            _ = try reconciler(b).runPass()
            XCTAssertEqual(try state(b.store, "b-2"), .finished, "\(b.name): settled once its store is back")
            XCTAssertTrue(try b.store.refundDeadlines(limit: 20).isEmpty, b.name)
        }
    }

    func testWhatTheBogusStoreDenies_isRejectedWithItsReason_onBothEngines() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("bogus-deny-\(b.name).sh", exit: 0))
            shop.sell("\(b.name)-R", productId: world.coins, to: "u-1")
            shop.refund("\(b.name)-R")
            shop.sell("\(b.name)-O", productId: world.coins, to: "someone-else")
            try bogusOrder(b, "b-refunded", transaction: "\(b.name)-R")
            try bogusOrder(b, "b-other-buyer", transaction: "\(b.name)-O")
            try bogusOrder(b, "b-unknown", transaction: "\(b.name)-U")
            _ = try reconciler(b).runPass()
            let reasons = try ["b-refunded", "b-other-buyer", "b-unknown"].map { try b.store.orderRecord($0)?.order.reason }
            XCTAssertEqual(reasons, ["refunded", "user_mismatch", "transaction_not_found"], b.name)
            XCTAssertTrue(world.deliveries.filter { $0.hasPrefix("\(b.name)-") }.isEmpty, "\(b.name): nothing granted")
        }
    }
}

extension LedgerContractTests {
    func testLedgerCopy_carriesAStoreModulesProofsAndTables_intoPostgreSQL() throws {
        let shop = BogusStoreModule.shop
        shop.reset()
        try world.writeConfig(hook: try world.hook("bogus-copy.sh", exit: 0))
        let path = world.folder + "/copy-source.sqlite3"
        let source = try SQLiteLedger(path: path, time: world.time)
        shop.sell("COPY-1", productId: world.coins, to: "u-1")
        var order = NewOrder(orderId: "b-copy", userId: "u-1", productId: world.coins, store: .bogus)
        order.storeProof = BogusStoreAdapter.proof(sale: "COPY-1")
        _ = try source.enqueue(order)
        _ = try Reconciler.configured(try world.configuration(), ledger: source, environment: [:], log: .silent,
                                      modules: TestStores.modules).runPass()
        try source.close()
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        let destination = try PostgresLedger(url: fresh.url, time: world.time)
        let report = try LedgerCopy.copy(fromSQLite: path, to: destination)
        XCTAssertTrue(report.counts.contains { $0 == ("bogus_sales_seen", 1) }, "\(report.counts)")
        let copied = try XCTUnwrap(try destination.orderRecord("b-copy")?.order)
        XCTAssertEqual(copied.state, .finished)
        XCTAssertEqual(copied.storeProof, order.storeProof, "the module's proof moves as written")
        XCTAssertEqual(try BogusStoreAdapter.salesSeen(destination), ["COPY-1": "b-copy"], "the module's table moves with the ledger")
    }
}
