import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleAppStore

/// Every rule of SPEC section 4 for a valid verifyReceipt answer, without I/O.
final class ReceiptMatcherTests: XCTestCase {
    let matcher = ReceiptMatcher(bundleId: "com.example.game", acceptSandbox: true,
                                 eligibility: PurchaseEligibility(products: ["coins": .consumable, "premium": .nonConsumable]))

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

    func match(_ r: ReceiptResponse, _ o: Order, environment: String = "Production", matcher: ReceiptMatcher? = nil) -> VerificationOutcome {
        (matcher ?? self.matcher).match(r, environment: environment, order: o)
    }

    /// The candidates' transaction ids, in the order the ledger will try them.
    func candidates(_ outcome: VerificationOutcome) -> [String]? {
        guard case let .verified(m) = outcome else { return nil }
        return m.candidates.map(\.transactionId)
    }

    func reason(_ outcome: VerificationOutcome) -> RejectionReason? {
        if case let .rejected(reason, _) = outcome { return reason }
        return nil
    }

    func testValidTransaction_isVerifiedWithItsFacts() throws {
        let r = try response(inApp: [entry("100", quantity: "3")])
        guard case let .verified(m) = match(r, order(transaction: "100")) else { return XCTFail() }
        XCTAssertEqual(m, Match(candidates: [VerifiedPurchase(transactionId: "100", originalTransactionId: "100", productId: "coins",
                                                              environment: "Production", quantity: 3, purchaseDateMs: 1000,
                                                              expiresDateMs: nil)], named: true))
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

    func testSandboxPurchase_rejectedWhenSandboxNotAccepted() throws {
        let strict = ReceiptMatcher(bundleId: "com.example.game", acceptSandbox: false,
                                    eligibility: PurchaseEligibility(products: ["coins": .consumable]))
        let r = try response(inApp: [entry("100")])
        XCTAssertEqual(reason(match(r, order(transaction: "100"), environment: "Sandbox", matcher: strict)), .sandboxNotAccepted)
        guard case .verified = match(r, order(transaction: "100"), environment: "Sandbox") else { return XCTFail() }
    }

    func testOrderWithoutTransactionId_offersEveryPurchaseOfItsProduct_oldestFirst() throws {
        // Out of order, duplicated across both lists, one of another product: which one the
        // order gets is decided when the ledger reserves it (LedgerGrantTests).
        let r = try response(inApp: [entry("300", purchased: 3000), entry("100", purchased: 1000), entry("50", product: "premium", purchased: 10)],
                             latest: [entry("200", purchased: 2000), entry("300", purchased: 3000)])
        XCTAssertEqual(candidates(match(r, order("o-9"))), ["100", "200", "300"])
    }

    func testOrderWithoutTransactionId_prefersNumericPurchaseTimeOverIdStrings() throws {
        // "9" < "10" as numbers but not as strings; ids are never ordered, times are.
        let r = try response(inApp: [entry("501136461303889853", purchased: 9), entry("150001161180179", purchased: 10)])
        XCTAssertEqual(candidates(match(r, order())), ["501136461303889853", "150001161180179"])
    }

    func testOrderWithoutTransactionId_refundedPurchasesAreNoCandidates() throws {
        let r = try response(inApp: [entry("100", purchased: 1, cancelled: 5), entry("200", purchased: 2)])
        XCTAssertEqual(candidates(match(r, order())), ["200"])
        XCTAssertEqual(reason(match(try response(inApp: [entry("100", cancelled: 5)]), order())), .refunded)
    }

    func testUpgradedTransaction_isNotGranted() throws {
        let upgraded = #"{"quantity": "1", "product_id": "coins", "transaction_id": "100", "original_transaction_id": "100", "purchase_date_ms": "1", "is_upgraded": "true"}"#
        XCTAssertEqual(reason(match(try response(inApp: [upgraded]), order(transaction: "100"))), .upgraded)
        XCTAssertEqual(candidates(match(try response(inApp: [upgraded, entry("200", purchased: 2)]), order())), ["200"])
    }

    func testNonConsumable_grantKeyIsItsOriginalTransaction_soARestoreIsNotGrantedAgain() throws {
        let restored = #"{"quantity": "1", "product_id": "premium", "transaction_id": "900", "original_transaction_id": "100", "purchase_date_ms": "9"}"#
        guard case let .verified(m) = match(try response(inApp: [restored]), order(product: "premium", transaction: "900")) else {
            return XCTFail()
        }
        XCTAssertEqual(m.candidates.map(\.grantKey), ["100"])
        guard case let .verified(c) = match(try response(inApp: [entry("100")]), order(transaction: "100")) else { return XCTFail() }
        XCTAssertEqual(c.candidates.map(\.grantKey), ["100"], "a consumable's key is its own transaction id")
    }

    func testIdsSentAsJSONNumbers_areRead() throws {
        let r = try response(inApp: [entry("1000000637840752", idAsNumber: true)])
        guard case let .verified(m) = match(r, order(transaction: "1000000637840752")) else { return XCTFail() }
        XCTAssertEqual(m.candidates.first?.originalTransactionId, "1000000637840752")
    }

    func testRetryableFlag_readInBothSpellings() throws {
        XCTAssertEqual(ReceiptResponse(try JSONValue.parse(#"{"status": 21104, "is-retryable": true}"#))?.isRetryable, true)
        XCTAssertEqual(ReceiptResponse(try JSONValue.parse(#"{"status": 21104, "is_retryable": 0}"#))?.isRetryable, false)
        XCTAssertEqual(ReceiptStatus(status: 21104, isRetryable: true), .storeUnavailable)
        XCTAssertEqual(ReceiptStatus(status: 21104, isRetryable: false), .invalid)
        XCTAssertEqual(ReceiptStatus(status: 21104, isRetryable: nil), .invalid)
    }

    func testStatusClasses() {
        XCTAssertEqual(ReceiptStatus(status: 0, isRetryable: nil), .valid)
        XCTAssertEqual(ReceiptStatus(status: 21002, isRetryable: nil), .retryOrder)
        XCTAssertEqual(ReceiptStatus(status: 21005, isRetryable: nil), .storeUnavailable)
        XCTAssertEqual(ReceiptStatus(status: 21009, isRetryable: nil), .storeUnavailable)
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
