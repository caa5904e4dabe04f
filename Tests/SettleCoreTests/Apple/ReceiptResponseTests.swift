import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleAppStore

/// Reading verifyReceipt answers of both shapes, and the iOS 6 transaction receipt format.
final class ReceiptResponseTests: XCTestCase {
    func parse(_ text: String) throws -> ReceiptResponse {
        try XCTUnwrap(ReceiptResponse(try JSONValue.parse(text)))
    }

    func testIsUpgraded_isReadAsStringOrBoolean_andFalseWhenAbsent() throws {
        let r = try parse("""
            {"status": 0, "receipt": {"bundle_id": "b", "in_app": [
              {"transaction_id": "1", "product_id": "p", "is_upgraded": "true"},
              {"transaction_id": "2", "product_id": "p", "is_upgraded": true},
              {"transaction_id": "3", "product_id": "p"}]}}
            """)
        XCTAssertEqual(r.transactions.map(\.isUpgraded), [true, true, false])
    }

    func testAppAccountToken_isLowercased_andNilWhenAbsentEmptyOrNotAUUID() throws {
        let r = try parse("""
            {"status": 0, "receipt": {"bundle_id": "b", "in_app": [
              {"transaction_id": "1", "product_id": "p", "app_account_token": "7E3FB20B-4CDB-47CC-936D-99D65F608138"},
              {"transaction_id": "2", "product_id": "p", "app_account_token": ""},
              {"transaction_id": "3", "product_id": "p"},
              {"transaction_id": "4", "product_id": "p", "app_account_token": "user-42"}]}}
            """)
        XCTAssertEqual(r.transactions.map(\.appAccountToken), ["7e3fb20b-4cdb-47cc-936d-99d65f608138", nil, nil, nil])
    }

    func testUpgradeSeenOnlyInLatestReceiptInfo_survivesTheMerge() throws {
        let r = try parse("""
            {"status": 0, "receipt": {"bundle_id": "b", "in_app": [{"transaction_id": "1", "product_id": "p"}]},
             "latest_receipt_info": [{"transaction_id": "1", "product_id": "p", "is_upgraded": "true",
                                      "app_account_token": "7e3fb20b-4cdb-47cc-936d-99d65f608138"}]}
            """)
        XCTAssertEqual(r.transactions.count, 1)
        XCTAssertEqual(r.transactions.first?.isUpgraded, true)
        XCTAssertEqual(r.transactions.first?.appAccountToken, "7e3fb20b-4cdb-47cc-936d-99d65f608138")
    }

    func testIOS6Answer_readsBundleFromBid_theReceiptAsATransaction_andLatestReceiptInfoObject() throws {
        let r = try parse("""
            {"status": 0, "environment": "Sandbox",
             "receipt": {"bid": "com.example.game", "bvrs": "1.0", "item_id": "521129812", "quantity": "1",
                         "product_id": "com.example.game.monthly", "transaction_id": "1000000058470211",
                         "original_transaction_id": "1000000058470211", "purchase_date_ms": "1353970384000",
                         "expires_date": "1353970684000", "expires_date_formatted": "2012-11-26 22:58:04 Etc/GMT"},
             "latest_receipt_info": {"bid": "com.example.game", "product_id": "com.example.game.monthly",
                         "transaction_id": "1000000058470990", "original_transaction_id": "1000000058470211",
                         "purchase_date_ms": "1353970684000", "expires_date": "1353970984000",
                         "cancellation_date": "1353970700000"}}
            """)
        XCTAssertTrue(r.hasReceipt)
        XCTAssertEqual(r.bundleId, "com.example.game")
        XCTAssertEqual(r.transactions.map(\.transactionId), ["1000000058470211", "1000000058470990"])
        XCTAssertEqual(r.transactions.map(\.originalTransactionId), ["1000000058470211", "1000000058470211"])
        XCTAssertEqual(r.transactions.map(\.expiresDateMs), [1_353_970_684_000, 1_353_970_984_000])
        XCTAssertEqual(r.transactions.map(\.cancellationDateMs), [nil, 1_353_970_700_000])
    }

    func testIOS6ExpiredAnswer_readsLatestExpiredReceiptInfo() throws {
        let r = try parse("""
            {"status": 21006,
             "receipt": {"bid": "b", "product_id": "p", "transaction_id": "1"},
             "latest_expired_receipt_info": {"bid": "b", "product_id": "p", "transaction_id": "2", "original_transaction_id": "1"}}
            """)
        XCTAssertEqual(r.bundleId, "b")
        XCTAssertEqual(r.transactions.map(\.transactionId), ["1", "2"])
    }

    func testAppReceiptAnswer_doesNotReadTheReceiptObjectAsATransaction() throws {
        let r = try parse(#"{"status": 0, "receipt": {"bundle_id": "b", "in_app": []}}"#)
        XCTAssertEqual(r.transactions, [])
    }

    // MARK: - iOS 6 transaction receipts

    /// A transaction receipt as `SKPaymentTransaction.transactionReceipt` holds it.
    static func transactionReceipt(transactionId: String) -> String {
        let purchaseInfo = """
            {
            \t"original-purchase-date-pst" = "2012-04-30 08:05:55 America/Los_Angeles";
            \t"original-transaction-id" = "\(transactionId)";
            \t"bvrs" = "1.0";
            \t"transaction-id" = "\(transactionId)";
            \t"quantity" = "1";
            \t"product-id" = "com.example.game.coins100";
            \t"bid" = "com.example.game";
            }
            """
        let outer = """
            {
            \t"signature" = "AhP1XvYJjhCxHcLRrYnGc3BUsXHRSxMBOJcS5a2RPXR2MuZ/UQpz";
            \t"purchase-info" = "\(Data(purchaseInfo.utf8).base64EncodedString())";
            \t"environment" = "Sandbox";
            \t"pod" = "100";
            \t"signing-status" = "0";
            }
            """
        return Data(outer.utf8).base64EncodedString()
    }

    func testTransactionReceipt_yieldsItsTransactionId() {
        XCTAssertEqual(TransactionReceipt.transactionId(base64: Self.transactionReceipt(transactionId: "1000000046178817")),
                       "1000000046178817")
    }

    func testTransactionReceipt_isNilForOtherFormats() {
        XCTAssertNil(TransactionReceipt.transactionId(base64: "not base64 !"))
        XCTAssertNil(TransactionReceipt.transactionId(base64: Data([0x30, 0x80, 0x06, 0x09]).base64EncodedString()))
        XCTAssertNil(TransactionReceipt.transactionId(base64: Data(#"{ "signature" = "x"; }"#.utf8).base64EncodedString()))
        let noTransaction = Data(#"{ "purchase-info" = "\#(Data(#"{ "bid" = "b"; }"#.utf8).base64EncodedString())"; }"#.utf8)
        XCTAssertNil(TransactionReceipt.transactionId(base64: noTransaction.base64EncodedString()))
    }

    func testAppReceiptParse_ofATransactionReceipt_failsWithItsOwnError() {
        XCTAssertThrowsError(try AppReceipt.parse(base64: Self.transactionReceipt(transactionId: "1000000046178817"))) { error in
            XCTAssertEqual(error as? AppReceiptError, .transactionReceiptFormat)
        }
    }
}
