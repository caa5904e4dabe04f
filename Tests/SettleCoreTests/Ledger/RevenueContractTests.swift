import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator

/// Recovered revenue (issue 37), on both engines: each order settle delivered carries the price
/// its store stated, else the configured one, else none; `settle report` sums them by day, store
/// and currency, never across currencies, and counts what was clawed back on refunds.
extension LedgerContractTests {
    private func bogusOrder(_ b: LedgerBackEnd, _ id: String, sale: String, product: String? = nil) throws {
        var order = NewOrder(orderId: id, userId: "u-1", productId: product ?? world.coins, store: .bogus)
        order.storeProof = BogusStoreAdapter.proof(sale: sale)
        _ = try b.store.enqueue(order)
    }

    private func priceColumns(_ b: LedgerBackEnd, _ id: String) throws -> [String?] {
        try b.store.reading { db in
            let row = try db.query("""
                SELECT price_milliunits, price_currency, price_source, recovered_at FROM orders WHERE order_id = ?
                """, [.text(id)]).first
            return [row?.int("price_milliunits").map(String.init), row?.string("price_currency"),
                    row?.string("price_source"), row?.int("recovered_at").map(String.init)]
        }
    }

    func store(_ milliunits: Int64, _ currency: String) -> Price? {
        Price(milliunits: milliunits, currency: currency, source: .store)
    }

    /// The store's price, the configured one (times the quantity), and none, through the pass;
    /// two currencies summed apart; the report's totals, its line for status and its JSON.
    func testRecoveredAmounts_fromTheStoresPrice_aConfiguredPrice_andUnknown_onBothEngines() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("revenue-\(b.name).sh", exit: 0),
                                  overrides: [("prices", .object([(world.coins, .string("0.99 USD"))]))])
            shop.sell("\(b.name)-S1", productId: world.coins, to: "u-1", price: store(4990, "USD"))
            shop.sell("\(b.name)-S2", productId: world.coins, to: "u-1", price: store(1_200_000, "JPY"))
            shop.sell("\(b.name)-C", productId: world.coins, to: "u-1", quantity: 3)
            shop.sell("\(b.name)-U", productId: world.premium, to: "u-1")
            try bogusOrder(b, "r-store", sale: "\(b.name)-S1")
            try bogusOrder(b, "r-yen", sale: "\(b.name)-S2")
            try bogusOrder(b, "r-configured", sale: "\(b.name)-C")
            try bogusOrder(b, "r-unknown", sale: "\(b.name)-U", product: world.premium)
            let start = world.time.unixSeconds
            let pass = try world.reconciler(ledger: b.store).runPass()
            XCTAssertEqual(pass.finished, 4, b.name)
            let now = String(world.time.unixSeconds)
            XCTAssertEqual(try priceColumns(b, "r-store"), ["4990", "USD", "store", now], b.name)
            XCTAssertEqual(try priceColumns(b, "r-yen"), ["1200000", "JPY", "store", now], b.name)
            XCTAssertEqual(try priceColumns(b, "r-configured"), ["2970", "USD", "configured", now],
                           "\(b.name): 3 × 0.99 USD")
            XCTAssertEqual(try priceColumns(b, "r-unknown"), [nil, nil, nil, now], "\(b.name): no price is guessed")
            XCTAssertEqual(try b.store.orderRecord("r-store")?.order.verified?.price, store(4990, "USD"))

            let report = try b.store.revenue(since: start - 86400, until: world.time.unixSeconds + 1)
            XCTAssertEqual(RevenueReport.orders(report.recovered), 4, b.name)
            XCTAssertEqual(RevenueReport.unpriced(report.recovered), 1, b.name)
            let totals = RevenueReport.totals(report.recovered).map { "\($0.orders) \($0.milliunits) \($0.currency)" }
            XCTAssertEqual(totals, ["1 1200000 JPY", "2 7960 USD"], "\(b.name): never two currencies in one sum")
            XCTAssertEqual(report.recovered.map(\.store), ["bogus", "bogus", "bogus"], b.name)
            XCTAssertEqual(RevenueView.summary("recovered", report.recovered),
                           "recovered: 4 orders, 1200 JPY, 7.96 USD; 1 without a price", b.name)
            XCTAssertTrue(report.clawedBack.isEmpty, b.name)
            let json = RevenueView.json(report)
            XCTAssertEqual(json["recovered"]?["without_price"], .number(1), b.name)
            let usd = json["recovered"]?["by_currency"]?.arrayValue?.last
            XCTAssertEqual(usd?["amount"], .string("7.96"), b.name)
            XCTAssertEqual(usd?["amount_milliunits"], .number(7960), b.name)
            XCTAssertEqual(json["recovered"]?["by_day"]?.arrayValue?.count, 3, b.name)

            // Outside the window: nothing.
            XCTAssertTrue(try b.store.revenue(since: world.time.unixSeconds + 1, until: world.time.unixSeconds + 86400)
                .recovered.isEmpty, b.name)
        }
    }

    /// A delivery recorded again (a rescue's redelivery under the same key) never counts twice,
    /// and an order whose purchase the backend granted itself is not recovered.
    func testARedelivery_countsOnce_andWhatTheBackendGranted_isNotRecovered_onBothEngines() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            try world.writeConfig(hook: try world.hook("revenue-once-\(b.name).sh", exit: 0),
                                  overrides: [("prices", .object([(world.coins, .string("2.50 EUR"))]))])
            shop.sell("\(b.name)-R1", productId: world.coins, to: "u-1")
            shop.sell("\(b.name)-R2", productId: world.coins, to: "u-1")
            let outside = "\(b.name)-R2"
            XCTAssertEqual(try b.store.recordOutsideGrant(transactionId: outside, grantKey: outside, note: "backend"),
                           .recorded)
            try bogusOrder(b, "once", sale: "\(b.name)-R1")
            try bogusOrder(b, "backend-granted", sale: "\(b.name)-R2")
            _ = try world.reconciler(ledger: b.store).runPass()
            XCTAssertEqual(try state(b.store, "backend-granted"), .finished, b.name)
            XCTAssertNil(try priceColumns(b, "backend-granted")[3], "\(b.name): the backend granted it, not settle")
            let first = try priceColumns(b, "once")[3]
            world.time.advance(by: 90_000)
            try b.store.writing { db in
                let again = HistoryEntry(at: self.world.time.unixSeconds, kind: .delivery, outcome: "delivered")
                try db.appendHistory("once", again)
            }
            XCTAssertEqual(try priceColumns(b, "once")[3], first, "\(b.name): the first delivery stays the one counted")
            let report = try b.store.revenue(since: 0, until: world.time.unixSeconds + 1)
            let rows = report.recovered.map { "\($0.orders) \($0.milliunits) \($0.currency ?? "-")" }
            XCTAssertEqual(rows, ["1 2500 EUR"], b.name)
        }
    }

    /// A recovered order refunded and revoked counts as recovered (the day it was delivered) and
    /// as clawed back (the day it was revoked); a prorated refund claws back its part only.
    func testARefundedRecoveredOrder_countsAsRecovered_andAsClawedBack_onBothEngines() throws {
        try onEachBackEnd { b in
            let shop = BogusStoreModule.shop
            shop.reset()
            let revoke = try world.write("revoke-\(b.name).sh", "#!/bin/sh\ncat > /dev/null\nexit 0\n", mode: 0o755)
            try world.writeConfig(overrides: [
                ("delivery", .object([("command", .array([.string(try world.hook("claw-\(b.name).sh", exit: 0))])),
                                      ("revoke_command", .array([.string(revoke)]))])),
            ])
            shop.sell("\(b.name)-K", productId: world.coins, to: "u-1", price: store(9990, "USD"))
            shop.sell("\(b.name)-P", productId: world.coins, to: "u-1", price: store(10000, "USD"))
            try bogusOrder(b, "kept-then-refunded", sale: "\(b.name)-K")
            try bogusOrder(b, "prorated", sale: "\(b.name)-P")
            _ = try world.reconciler(ledger: b.store).runPass()
            world.time.advance(by: 2 * 86400)
            let refunded = try b.store.applyStoreRefund(store: .bogus, grantKey: "\(b.name)-K", kind: "REFUND",
                                                        reason: nil, why: "test", source: "test")
            XCTAssertEqual(refunded["kept-then-refunded"], "revoke_queued", "\(b.name): \(refunded)")
            _ = try b.store.applyStoreRefund(store: .bogus, grantKey: "\(b.name)-P", kind: "REFUND",
                                             reason: nil, why: "t", source: "t")
            try b.execute("UPDATE revocations SET revocation_percentage = 25000 WHERE order_id = 'prorated'")
            _ = try world.reconciler(ledger: b.store).runPass()
            let report = try b.store.revenue(since: 0, until: world.time.unixSeconds + 1)
            let recovered = RevenueReport.totals(report.recovered).map { "\($0.orders) \($0.milliunits)" }
            XCTAssertEqual(recovered, ["2 19990"], b.name)
            let clawed = RevenueReport.totals(report.clawedBack).map { "\($0.orders) \($0.milliunits) \($0.currency)" }
            XCTAssertEqual(clawed, ["2 12490 USD"], "\(b.name): 9.99 whole and 25 % of 10.00")
            let today = world.time.unixSeconds / 86400 * 86400
            XCTAssertEqual(report.clawedBack.map(\.day), [today], "\(b.name): on the day revoked")
            XCTAssertNotEqual(report.recovered.map(\.day), report.clawedBack.map(\.day), b.name)
        }
    }

    /// A backend's own row cannot claim a recovery or a price: the ledger clears them on insert.
    func testABackendsRow_cannotClaimARecoveryOrAPrice_onBothEngines() throws {
        try onEachBackEnd { b in
            try b.execute("""
                INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, next_attempt_at, created_at,
                                   updated_at, recovered_at, price_milliunits, price_currency, price_source)
                VALUES ('forged', 'u-1', 'coins', '555', 'pending', 0, 0, 0, 1, 999999, 'USD', 'store')
                """)
            XCTAssertEqual(try priceColumns(b, "forged"), [nil, nil, nil, nil], b.name)
            for change in ["price_currency = '<b>'", "price_currency = 'usd'", "price_milliunits = -1",
                           "price_milliunits = 1000000000001", "price_source = 'guessed'"] {
                XCTAssertThrowsError(try b.execute("UPDATE orders SET \(change) WHERE order_id = 'forged'"),
                                     "\(b.name): \(change) is no price")
            }
            XCTAssertTrue(try b.store.revenue(since: 0, until: .max).recovered.isEmpty, b.name)
        }
    }
}

/// The App Store's signed transaction carries `price` (milliunits) and `currency`: read into the
/// order, and an absurd one (negative, huge, text, a currency that is not a code) is unknown
/// while the purchase is still delivered.
extension LedgerContractTests {
    func testApplesSignedTransactionPrice_isRecorded_andAnAbsurdOneIsUnknown_onBothEngines() throws {
        try onEachBackEnd { b in
            let hook = try world.hook("apple-price-\(b.name).sh", exit: 0)
            try world.writeConfig(hook: hook, receiptAPI: false, serverAPI: true)
            let cases: [(String, JSONValue?, JSONValue?, [String?])] = [
                ("good", .number(4990), .string("USD"), ["4990", "USD", "store"]),
                ("negative", .number(-1), .string("USD"), [nil, nil, nil]),
                ("huge", .number("1e30"), .string("USD"), [nil, nil, nil]),
                ("fraction", .number("4990.5"), .string("USD"), [nil, nil, nil]),
                ("text", .string("4990"), .string("USD"), [nil, nil, nil]),
                ("script", .number(4990), .string("<script>"), [nil, nil, nil]),
                ("none", nil, nil, [nil, nil, nil]),
            ]
            for (i, c) in cases.enumerated() {
                var t = SimulatedSignedTransaction(transactionId: "\(b.name.count)00000099000000\(i)",
                                                   productId: world.coins, bundleId: world.bundleId)
                (t.price, t.currency) = (c.1, c.2)
                world.simulator.script(transaction: t.transactionId, TransactionScript(transaction: t))
                _ = try b.store.enqueue(NewOrder(orderId: "priced-\(c.0)", userId: "u-1", productId: world.coins,
                                                 signedTransaction: try t.signed(at: world.time.unixSeconds * 1000)))
            }
            _ = try world.reconciler(ledger: b.store).runPass()
            for c in cases {
                let order = try b.store.orderRecord("priced-\(c.0)")?.order
                XCTAssertEqual(order?.state, .finished,
                               "\(b.name) \(c.0): a bad price never holds a purchase back: \(order?.lastError ?? "")")
                XCTAssertEqual(Array(try priceColumns(b, "priced-\(c.0)").prefix(3)), c.3, "\(b.name) \(c.0)")
            }
            let report = try b.store.revenue(since: 0, until: world.time.unixSeconds + 1)
            XCTAssertEqual(RevenueView.summary("recovered", report.recovered),
                           "recovered: 7 orders, 4.99 USD; 6 without a price", b.name)
        }
    }
}

/// `settle ledger copy` carries each order's price and recovery into PostgreSQL: the insert guard
/// that clears them on a backend's rows is off for the copy, and on again after it.
extension LedgerContractTests {
    func testLedgerCopy_carriesPricesAndRecoveries_andTheGuardIsOnAgainAfter() throws {
        let shop = BogusStoreModule.shop
        shop.reset()
        try world.writeConfig(hook: try world.hook("revenue-copy.sh", exit: 0))
        let path = world.folder + "/revenue-copy.sqlite3"
        let source = try SQLiteLedger(path: path, time: world.time)
        shop.sell("COPY-P", productId: world.coins, to: "u-1", price: store(4990, "USD"))
        var order = NewOrder(orderId: "priced-copy", userId: "u-1", productId: world.coins, store: .bogus)
        order.storeProof = BogusStoreAdapter.proof(sale: "COPY-P")
        _ = try source.enqueue(order)
        _ = try world.reconciler(ledger: source).runPass()
        let before = try source.revenue(since: 0, until: world.time.unixSeconds + 1)
        try source.close()
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        let destination = try PostgresLedger(url: fresh.url, time: world.time)
        _ = try LedgerCopy.copy(fromSQLite: path, to: destination)
        XCTAssertEqual(try destination.revenue(since: 0, until: world.time.unixSeconds + 1), before)
        XCTAssertEqual(RevenueReport.totals(before.recovered).map(\.milliunits), [4990])
        XCTAssertEqual(try destination.orderRecord("priced-copy")?.order.verified?.price?.text, "4.99 USD")
        let connection = try PostgresConnection(url: fresh.url)
        defer { connection.close() }
        try connection.execute("""
            INSERT INTO orders(order_id, user_id, product_id, transaction_id, recovered_at, price_milliunits,
                               price_currency)
            VALUES ('after-copy', 'u-1', 'coins', '777', 5, 1, 'USD')
            """)
        let read = "SELECT recovered_at, price_milliunits FROM orders WHERE order_id = 'after-copy'"
        let row = try connection.run(read).first
        XCTAssertNil(row?.int("recovered_at"), "the guard is on again after the copy")
        XCTAssertNil(row?.int("price_milliunits"))
    }
}
