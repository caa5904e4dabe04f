import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
import SettleGooglePlay

/// One-time products with purchase options (2025): settle reads them through productsv2, the
/// only view of the option bought; a rental is granted until its end, never as a permanent product.
class GooglePlayPurchaseOptionTests: GooglePlayTestCase {
    let movie = "movie_blade"
    let album = "album_one"
    var ledgerOverride: [(String, JSONValue)] { [] }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try writePlayConfig(extra: [
            ("products", .object([
                (gems, .object([("type", .string("consumable")), ("store", .string("google_play")), ("grant", .object([("gems", .number(100))]))])),
                (unlock, .object([("type", .string("non_consumable")), ("store", .string("google_play"))])),
                (movie, .object([("type", .string("non_consumable")), ("store", .string("google_play")),
                                 ("purchase_option", .string("rent-2d")), ("rental_period", .string("P2D"))])),
                (album, .object([("type", .string("non_consumable")), ("store", .string("google_play")),
                                 ("purchase_option", .string("buy"))])),
            ])),
        ] + ledgerOverride)
    }

    func testRental_isReadThroughProductsV2_andDeliveredWithItsEndAsExpiresDate() throws {
        let token = scriptProduct("rent", product: movie, orderId: "GPA.8888-0000-0000-00001", boughtAgo: 60)
        fake.script(purchaseOption: "rent-2d", rental: true, for: token)
        try enqueuePlay("o-rent", token: token, product: movie)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-rent"), "finished")
        XCTAssertEqual(world.deliveries, ["GPA.8888-0000-0000-00001 o-rent"])
        let bought = (world.time.unixSeconds - 60) * 1000
        XCTAssertEqual(try payload("o-rent")["expires_date"], .string(Timestamp.rfc3339(milliseconds: bought + 2 * 86_400_000)))
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .acknowledged)
        XCTAssertTrue(fake.calls.contains { $0.path.contains("/purchases/productsv2/tokens/") }, "productsv2 was not asked")
        XCTAssertFalse(fake.calls.contains { $0.method == "GET" && $0.path.contains("/purchases/products/") })
    }

    func testRentalOfAProductWithoutARentalPeriod_isNeverGrantedAsPermanent() throws {
        let token = scriptProduct("rent-unlock", product: unlock, orderId: "GPA.8888-0000-0000-00002")
        fake.script(purchaseOption: "rent-1w", rental: true, for: token)
        try enqueuePlay("o-ru", token: token, product: unlock)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-ru"), "needs_attention")
        XCTAssertEqual(try order("o-ru")["reason"], .string("unknown_product"))
        XCTAssertTrue(try order("o-ru")["last_error"]?.looseString?.contains("rental_period") == true)
        XCTAssertTrue(world.deliveries.isEmpty)
        XCTAssertEqual(fake.product(token)?.acknowledgementState, .yetToBeAcknowledged)
    }

    func testPurchaseUnderAnotherOptionThanTheProductNames_isSetAside_andTheNamedOptionIsDelivered() throws {
        let other = scriptProduct("album-pre", product: album, orderId: "GPA.8888-0000-0000-00003")
        fake.script(purchaseOption: "buy-preorder", for: other)
        try enqueuePlay("o-other", token: other, product: album)
        let named = scriptProduct("album-buy", product: album, orderId: "GPA.8888-0000-0000-00004")
        fake.script(purchaseOption: "buy", for: named)
        try enqueuePlay("o-buy", token: named, product: album)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-other"), "needs_attention")
        XCTAssertTrue(try order("o-other")["last_error"]?.looseString?.contains("buy-preorder") == true)
        XCTAssertEqual(try state("o-buy"), "finished")
        XCTAssertEqual(try payload("o-buy")["expires_date"], .null, "a bought option is permanent")
        XCTAssertEqual(world.deliveries, ["GPA.8888-0000-0000-00004 o-buy"])
    }

    func testRentalPeriod_mustBeADurationOfAFixedLength_andNameItsOption() throws {
        try writePlayConfig(extra: [("products", .object([
            (movie, .object([("type", .string("non_consumable")), ("store", .string("google_play")),
                             ("purchase_option", .string("rent")), ("rental_period", .string("P1M"))])),
        ]))])
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("rental_period"))
        try writePlayConfig(extra: [("products", .object([
            (movie, .object([("type", .string("non_consumable")), ("store", .string("google_play")), ("rental_period", .string("PT48H"))])),
        ]))])
        XCTAssertTrue(try settle(expecting: 78, ["check-config"]).stderr.contains("purchase_option"))
    }
}

/// The same purchases on a PostgreSQL ledger.
final class GooglePlayPurchaseOptionPostgresTests: GooglePlayPurchaseOptionTests {
    var schema = ""
    var url = ""
    override var ledgerOverride: [(String, JSONValue)] { [("ledger", .string(url))] }

    override func setUpWithError() throws {
        let fresh = try TestPostgres.freshSchema()
        (url, schema) = (fresh.url, fresh.schema)
        try super.setUpWithError()
        try settle(expecting: 0, ["migrate"])
    }

    override func tearDownWithError() throws {
        TestPostgres.drop(schema: schema)
        try super.tearDownWithError()
    }

    override func testRental_isReadThroughProductsV2_andDeliveredWithItsEndAsExpiresDate() throws {
        try super.testRental_isReadThroughProductsV2_andDeliveredWithItsEndAsExpiresDate()
    }

    override func testRentalOfAProductWithoutARentalPeriod_isNeverGrantedAsPermanent() throws {
        try super.testRentalOfAProductWithoutARentalPeriod_isNeverGrantedAsPermanent()
    }

    override func testPurchaseUnderAnotherOptionThanTheProductNames_isSetAside_andTheNamedOptionIsDelivered() throws {
        try super.testPurchaseUnderAnotherOptionThanTheProductNames_isSetAside_andTheNamedOptionIsDelivered()
    }
}
