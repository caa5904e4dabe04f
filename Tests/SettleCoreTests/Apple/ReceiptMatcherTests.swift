import XCTest
@testable import SettleCore

/// Every rule of SPEC section 4 for a valid verifyReceipt answer, without I/O.
final class ReceiptMatcherTests: XCTestCase {
    let matcher = ReceiptMatcher(bundleId: "com.example.game", acceptSandbox: true,
                                 products: ["coins", "premium"])

    func order(_ id: String = "o-1", product: String = "coins", transaction: String? = nil) -> Order {
        Order(orderId: id, userId: "u-1", productId: product, requestedTransactionId: transaction, receiptSHA256: "x",
              signedTransaction: nil, state: .verifying, attempts: 0, nextAttemptAt: 0, reason: nil, lastError: nil,
              environment: nil, verified: nil, createdAt: 0, updatedAt: 0, finishedAt: nil, lease: nil)
    }

    func response(bundle: String = "com.example.game", inApp: [String] = [], latest: [String] = []) throws -> ReceiptResponse {
        let text = """
        {"status": 0, "environment": "Production",
         "receipt": {"bundle_id": "\(bundle)", "download_id": 500935934584949200, "in_app": [\(inApp.joined(separator: ","))]},
         "latest_receipt_info": [\(latest.joined(separator: ","))]}
        """
        return try XCTUnwrap(ReceiptResponse(try JSONValue.parse(text)))
    }

    func entry(_ txn: String, product: String = "coins", purchased: Int64 = 1000, cancelled: Int64? = nil,
               quantity: String = "1", idAsNumber: Bool = false) -> String {
        let id = idAsNumber ? txn : "\"\(txn)\""
        var text = #"{"quantity": "\#(quantity)", "product_id": "\#(product)", "transaction_id": \#(id), "original_transaction_id": \#(id), "purchase_date_ms": "\#(purchased)""#
        if let cancelled { text += #", "cancellation_date_ms": "\#(cancelled)", "cancellation_reason": "0""# }
        return text + "}"
    }

    func match(_ r: ReceiptResponse, _ o: Order, environment: String = "Production", held: [String: String] = [:],
               matcher: ReceiptMatcher? = nil) -> VerificationOutcome {
        (matcher ?? self.matcher).match(r, environment: environment, order: o, grantHolder: { held[$0] })
    }

    func reason(_ outcome: VerificationOutcome) -> RejectionReason? {
        if case let .rejected(reason, _) = outcome { return reason }
        return nil
    }

    func testValidTransaction_isVerifiedWithItsFacts() throws {
        let r = try response(inApp: [entry("100", quantity: "3")])
        guard case let .verified(p) = match(r, order(transaction: "100")) else { return XCTFail() }
        XCTAssertEqual(p, VerifiedPurchase(transactionId: "100", originalTransactionId: "100", productId: "coins",
                                           environment: "Production", quantity: 3, purchaseDateMs: 1000, expiresDateMs: nil))
    }

    func testBundleMismatch() throws {
        XCTAssertEqual(reason(match(try response(bundle: "com.other.app", inApp: [entry("100")]), order(transaction: "100"))), .bundleMismatch)
    }

    func testTransactionNotFound() throws {
        XCTAssertEqual(reason(match(try response(inApp: [entry("100")]), order(transaction: "999"))), .transactionNotFound)
        XCTAssertEqual(reason(match(try response(inApp: []), order())), .transactionNotFound)
    }

    func testProductMismatch() throws {
        XCTAssertEqual(reason(match(try response(inApp: [entry("100", product: "premium")]), order(transaction: "100"))), .productMismatch)
    }

    func testUnknownProduct() throws {
        let r = try response(inApp: [entry("100", product: "gems")])
        XCTAssertEqual(reason(match(r, order(product: "gems", transaction: "100"))), .unknownProduct)
    }

    func testRefunded() throws {
        XCTAssertEqual(reason(match(try response(inApp: [entry("100", cancelled: 5000)]), order(transaction: "100"))), .refunded)
    }

    func testRefundSeenOnlyInLatestReceiptInfo_stillRejects() throws {
        let r = try response(inApp: [entry("100")], latest: [entry("100", cancelled: 5000)])
        XCTAssertEqual(r.transactions.count, 1, "the duplicate is merged")
        XCTAssertEqual(reason(match(r, order(transaction: "100"))), .refunded)
    }

    func testAlreadyGrantedToAnotherOrder() throws {
        let r = try response(inApp: [entry("100")])
        XCTAssertEqual(reason(match(r, order("o-2", transaction: "100"), held: ["100": "o-1"])), .alreadyGranted)
        guard case .verified = match(r, order("o-1", transaction: "100"), held: ["100": "o-1"]) else {
            return XCTFail("the holder itself may be re-verified")
        }
    }

    func testSandboxPurchase_rejectedWhenSandboxNotAccepted() throws {
        let strict = ReceiptMatcher(bundleId: "com.example.game", acceptSandbox: false, products: ["coins"])
        let r = try response(inApp: [entry("100")])
        XCTAssertEqual(reason(match(r, order(transaction: "100"), environment: "Sandbox", matcher: strict)), .sandboxNotAccepted)
        guard case .verified = match(r, order(transaction: "100"), environment: "Sandbox") else { return XCTFail() }
    }

    func testOrderWithoutTransactionId_takesOldestUngrantedOfItsProduct() throws {
        // Out of order, duplicated across both lists, one of another product, the oldest already granted.
        let r = try response(inApp: [entry("300", purchased: 3000), entry("100", purchased: 1000), entry("50", product: "premium", purchased: 10)],
                             latest: [entry("200", purchased: 2000), entry("300", purchased: 3000)])
        guard case let .verified(p) = match(r, order("o-9"), held: ["100": "o-1"]) else { return XCTFail() }
        XCTAssertEqual(p.transactionId, "200")
    }

    func testOrderWithoutTransactionId_prefersNumericPurchaseTimeOverIdStrings() throws {
        // "9" < "10" as numbers but not as strings; ids are never ordered, times are.
        let r = try response(inApp: [entry("501136461303889853", purchased: 9), entry("150001161180179", purchased: 10)])
        guard case let .verified(p) = match(r, order()) else { return XCTFail() }
        XCTAssertEqual(p.transactionId, "501136461303889853")
    }

    func testOrderWithoutTransactionId_whenAllAreGrantedElsewhere_isAlreadyGranted() throws {
        let r = try response(inApp: [entry("100")])
        XCTAssertEqual(reason(match(r, order("o-2"), held: ["100": "o-1"])), .alreadyGranted)
    }

    func testOrderWithoutTransactionId_keepsTheTransactionItAlreadyHolds() throws {
        let r = try response(inApp: [entry("100", purchased: 1), entry("200", purchased: 2)])
        guard case let .verified(p) = match(r, order("o-2"), held: ["200": "o-2"]) else { return XCTFail() }
        XCTAssertEqual(p.transactionId, "200")
    }

    func testIdsSentAsJSONNumbers_areRead() throws {
        let r = try response(inApp: [entry("1000000637840752", idAsNumber: true)])
        guard case let .verified(p) = match(r, order(transaction: "1000000637840752")) else { return XCTFail() }
        XCTAssertEqual(p.originalTransactionId, "1000000637840752")
    }

    func testRetryableFlag_readInBothSpellings() throws {
        XCTAssertEqual(ReceiptResponse(try JSONValue.parse(#"{"status": 21104, "is-retryable": true}"#))?.isRetryable, true)
        XCTAssertEqual(ReceiptResponse(try JSONValue.parse(#"{"status": 21104, "is_retryable": 0}"#))?.isRetryable, false)
        XCTAssertEqual(ReceiptStatus(status: 21104, isRetryable: true), .appleUnavailable)
        XCTAssertEqual(ReceiptStatus(status: 21104, isRetryable: false), .invalid)
        XCTAssertEqual(ReceiptStatus(status: 21104, isRetryable: nil), .invalid)
    }

    func testStatusClasses() {
        XCTAssertEqual(ReceiptStatus(status: 0, isRetryable: nil), .valid)
        XCTAssertEqual(ReceiptStatus(status: 21002, isRetryable: nil), .retryOrder)
        XCTAssertEqual(ReceiptStatus(status: 21005, isRetryable: nil), .appleUnavailable)
        XCTAssertEqual(ReceiptStatus(status: 21009, isRetryable: nil), .appleUnavailable)
        XCTAssertEqual(ReceiptStatus(status: 21003, isRetryable: nil), .invalid)
        XCTAssertEqual(ReceiptStatus(status: 21010, isRetryable: nil), .invalid)
        XCTAssertEqual(ReceiptStatus(status: 21004, isRetryable: nil), .configurationFault)
        XCTAssertEqual(ReceiptStatus(status: 21000, isRetryable: nil), .configurationFault)
        XCTAssertEqual(ReceiptStatus(status: 21007, isRetryable: nil), .sandboxReceipt)
        XCTAssertEqual(ReceiptStatus(status: 21008, isRetryable: nil), .productionReceipt)
        XCTAssertEqual(ReceiptStatus(status: 21006, isRetryable: nil), .validExpired)
    }

    func testNotAReceiptAnswer_isNil() throws {
        XCTAssertNil(ReceiptResponse(try JSONValue.parse(#"{"hello": 1}"#)))
        XCTAssertNil(ReceiptResponse(try JSONValue.parse(#"[0]"#)))
    }
}
