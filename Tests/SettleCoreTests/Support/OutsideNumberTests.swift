import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger
@testable import SettleGooglePlay
@testable import SettleEngine
@testable import SettleAppStore
@testable import SettleDelivery
@testable import SettleGooglePlayModule

/// Every number that came from outside (a store's answer, a push, a header, a ledger row a
/// backend wrote) fed to what reads and computes with it (issue 32, item 16): Int64.min and
/// max, -1, 0, absurd times, 1e30 as a double, digits beyond Int64. None may trap (a trap here
/// kills the whole test run, as it killed the daemon); each is read, clamped or refused as said.
final class OutsideNumberTests: XCTestCase {
    /// The values every parser is fed, as JSON would carry them.
    static let texts = ["-9223372036854775808", "9223372036854775807", "-1", "0", "1e30", "-1e30", "NaN", "Infinity",
                        String(repeating: "9", count: 400), "-" + String(repeating: "9", count: 400), "1.5e18", "9223372036854775808"]
    static let extremes: [Int64] = [.min, .min + 1, -1, 0, 1, .max - 1, .max]

    // MARK: - Saturating arithmetic, times

    func testSaturatingArithmetic_stopsAtTheBounds() {
        XCTAssertEqual(Int64.min.saturatingSubtracting(1), .min)
        XCTAssertEqual(Int64.max.saturatingSubtracting(-1), .max)
        XCTAssertEqual(Int64(0).saturatingSubtracting(.min), .max)
        XCTAssertEqual(Int64(5).saturatingSubtracting(3), 2)
        XCTAssertEqual(Int64.max.saturatingMultiplied(by: 1000), .max)
        XCTAssertEqual(Int64.min.saturatingMultiplied(by: 1000), .min)
        XCTAssertEqual(Int64.min.saturatingMultiplied(by: -1), .max)
        XCTAssertEqual(Int64(-3).saturatingMultiplied(by: 1000), -3000)
        XCTAssertEqual(Int(saturating: 1e30), .max)
        XCTAssertEqual(Int(saturating: -1e30), .min)
        XCTAssertEqual(Int(saturating: .nan), 0)
        XCTAssertEqual(Int(saturating: 12.9), 12)
    }

    func testPlausibleTime_refusesWhatNoStoreSends_namingTheField() {
        let range = "is not a time between 2000-01-01T00:00:00Z and 2200-01-01T00:00:00Z"
        for value in Self.extremes + [946_684_799_999, 7_258_118_400_001] {
            XCTAssertEqual(PlausibleTime.refusal(milliseconds: value, field: "eventTimeMillis"), "eventTimeMillis \(value) \(range)")
        }
        for value in Self.extremes + [946_684_799, 7_258_118_401] {
            XCTAssertEqual(PlausibleTime.refusal(seconds: value, field: "received_at"), "received_at \(value) \(range)")
        }
        XCTAssertNil(PlausibleTime.refusal(milliseconds: 946_684_800_000, field: "x"))
        XCTAssertNil(PlausibleTime.refusal(milliseconds: 1_764_410_645_000, field: "x"))
        XCTAssertNil(PlausibleTime.refusal(milliseconds: 7_258_118_400_000, field: "x"))
        XCTAssertNil(PlausibleTime.refusal(seconds: 1_764_410_645, field: "x"))
    }

    func testTimestamps_ofAnyTime_areText() {
        for value in Self.extremes {
            for now in Self.extremes + [1_764_410_645] {
                XCTAssertFalse(Timestamp.relative(value, now: now).isEmpty, "\(value) at \(now)")
            }
            XCTAssertFalse(Timestamp.rfc3339(milliseconds: value).isEmpty)
            XCTAssertFalse(Timestamp.rfc3339(unixSeconds: value).isEmpty)
        }
        XCTAssertTrue(Timestamp.relative(.min, now: 1_764_410_645).hasSuffix("ago)"))
        XCTAssertTrue(Timestamp.relative(.max, now: -5).contains("(in "))
    }

    func testSignedDatesOfAnySize_formatForTheCertificateCheck() {
        // A JWS's signedDate / receiptCreationDate is read as Double milliseconds and named in the
        // refusal of a certificate "not valid at" it.
        for milliseconds in [1e30, -1e30, 1e308, -1e308, Double(Int64.max), Double(Int64.min), 0] {
            XCTAssertFalse(Date(timeIntervalSince1970: milliseconds / 1000).formatted(.iso8601).isEmpty, "\(milliseconds)")
        }
    }

    // MARK: - Google: pushes, purchases, voided purchases, headers

    func testPushes_withAnyEventTime_areRead_andThoseAVoidingOrAReviewCountsFrom_areRefused() throws {
        let token = PurchaseToken("tok-fuzz-AO-J1OxYz.SECRETPLAYTOKEN_abcdefghijklmnopqrstuvwxyz")!
        let record = PlayNotificationRecord(messageId: "m", kind: "voided_purchase", receivedAt: 1_764_410_645, outcome: "received",
                                            detail: nil, orderId: nil, payload: "")
        for text in Self.texts {
            for quoted in [true, false] {
                let time = quoted ? "\"\(text)\"" : text
                let body = """
                    {"version":"1.0","packageName":"p","eventTimeMillis":\(time),
                     "voidedPurchaseNotification":{"purchaseToken":"\(token.value)","orderId":"GPA.1","productType":2,"refundType":1}}
                    """
                guard let json = try? JSONValue.parse(Data(body.utf8)) else { continue }
                let notification = try DeveloperNotification(json: json)
                let read = notification.eventTimeMillis
                XCTAssertEqual(read, Int64(text) ?? Double(text).flatMap { $0.isFinite && abs($0) < 9.2e18 ? Int64($0) : nil }, text)
                let refusal = PlayNotificationInbox.timeRefusal(notification, record: record)
                if let read {
                    XCTAssertEqual(refusal, PlausibleTime.refusal(milliseconds: read, field: "eventTimeMillis"), text)
                    XCTAssertNotNil(refusal, text)
                } else {
                    XCTAssertNil(refusal, "\(text): no time, the received time counts")
                }
            }
        }
        // A purchase push does not count from its time: it is read from Google whatever its time.
        let purchase = DeveloperNotification(packageName: "p", eventTimeMillis: .min, kind: .oneTimeProduct(
            OneTimeProductNotification(rawNotificationType: 1, purchaseToken: token, sku: "gems")))
        XCTAssertNil(PlayNotificationInbox.timeRefusal(purchase, record: record))
        var row = record
        for received in Self.extremes {
            row.receivedAt = received
            let voided = DeveloperNotification(packageName: "p", eventTimeMillis: nil, kind: .voidedPurchase(
                VoidedPurchaseNotification(purchaseToken: token, orderId: "GPA.1", rawProductType: 2, rawRefundType: 1)))
            XCTAssertEqual(PlayNotificationInbox.timeRefusal(voided, record: row),
                           "received_at \(received) is not a time between 2000-01-01T00:00:00Z and 2200-01-01T00:00:00Z "
                           + "(the row was not written by settle)")
        }
    }

    func testGooglePurchasesAndVoidedPurchases_withAbsurdNumbers_areReadWithoutTrapping() throws {
        for text in Self.texts {
            let body = """
                {"purchaseToken":"tok-fuzz-AO-J1OxYz.SECRETPLAYTOKEN_abc","orderId":"GPA.1","purchaseTimeMillis":"\(text)",
                 "voidedTimeMillis":"\(text)","voidedSource":"\(text)","voidedReason":"\(text)","voidedQuantity":"\(text)",
                 "purchaseState":"\(text)","consumptionState":"\(text)","acknowledgementState":"\(text)","quantity":"\(text)"}
                """
            let json = try JSONValue.parse(Data(body.utf8))
            let voided = try XCTUnwrap(VoidedPurchase(json: json), text)
            let purchase = try XCTUnwrap(ProductPurchase(json: json), text)
            XCTAssertEqual(voided.voidedTimeMillis, purchase.purchaseTimeMillis, text)
            _ = PlayPurchaseFacts(product: purchase, productId: "gems")
        }
        // RFC 3339 times Google sends for a v2 purchase and a subscription's expiry.
        for time in ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "+275760-09-13T00:00:00Z",
                     "99999999999-01-01T00:00:00Z", "2026-12-05T01:00:00.999999999Z", "not a time"] {
            let v2 = ProductPurchaseV2(lineItems: [], rawPurchaseState: "PURCHASE_STATE_PURCHASED", orderId: "GPA.1",
                                       purchaseCompletionTime: time)
            _ = v2.completionMillis
            _ = SubscriptionPurchaseV2.LineItem(productId: "pro", expiryTime: time).expiry
        }
    }

    func testAppleReceiptsAndSignedTransactions_withAbsurdNumbers_areReadOrRefused_andTheirHookPayloadIsText() throws {
        for text in Self.texts {
            let entry = try JSONValue.parse(Data("""
                {"transaction_id":"100","product_id":"coins","quantity":"\(text)","purchase_date_ms":"\(text)",
                 "expires_date_ms":"\(text)","cancellation_date_ms":"\(text)"}
                """.utf8))
            let receipt = try XCTUnwrap(ReceiptTransaction(entry), text)
            XCTAssertEqual(receipt.purchaseDateMs, entry["purchase_date_ms"]?.looseInt64, text)
            for quantity in ["1", text] {
                let payload = try JSONValue.parse(Data("""
                    {"transactionId":"100","originalTransactionId":"100","bundleId":"b","productId":"coins","environment":"Production",
                     "purchaseDate":"\(text)","expiresDate":"\(text)","revocationDate":"\(text)","signedDate":"\(text)",
                     "quantity":"\(quantity)"}
                    """.utf8))
                do {
                    let transaction = try SignedTransaction(decoding: payload)
                    XCTAssertGreaterThanOrEqual(transaction.quantity, 1, text)
                    let purchase = VerifiedPurchase(transactionId: "100", originalTransactionId: "100", productId: "coins",
                                                    environment: "Production", quantity: transaction.quantity,
                                                    purchaseDateMs: transaction.purchaseDateMs, expiresDateMs: transaction.expiresDateMs)
                    let order = Order(orderId: "o", userId: "u", productId: "coins", state: .delivering, attempts: 0, nextAttemptAt: 0,
                                      verified: purchase, createdAt: transaction.purchaseDateMs ?? 0, updatedAt: 0)
                    XCTAssertNotNil(HookPayload.make(order: order, purchase: purchase, product: nil)["purchase_date"], text)
                    XCTAssertFalse(Verdict(order, now: 1_764_410_645).charged.isEmpty, text)
                } catch {
                    // Refused, naming the field: never a trap.
                    XCTAssertTrue("\(error)".contains("quantity") || "\(error)".contains("Date"), "\(text): \(error)")
                }
            }
        }
    }

    func testRetryAfterAndCacheControl_ofAnySize_areBounded() {
        let now = Date(timeIntervalSince1970: 1_764_410_645)
        for text in Self.texts + ["9223372036854775807", "Sat, 01 Jan 99999 00:00:00 GMT", "-5"] {
            if let seconds = RetryAfter.seconds(text, now: now) {
                XCTAssertTrue((0...RetryAfter.longest).contains(seconds), "\(text): \(seconds)")
            }
            for age in Self.texts + [nil] {
                let fresh = GooglePushKeys.maxAge(cacheControl: "max-age=\(text)", age: age)
                XCTAssertTrue((GooglePushKeys.minimumRefreshSeconds...GooglePushKeys.maximumMaxAge).contains(fresh), "\(text) \(age ?? "-")")
            }
        }
        XCTAssertEqual(RetryAfter.seconds("9223372036854775807", now: now), RetryAfter.longest)
        XCTAssertEqual(GooglePushKeys.maxAge(cacheControl: "max-age=-9223372036854775808", age: "1"), GooglePushKeys.minimumRefreshSeconds)
        for seconds in [Double.nan, .infinity, -.infinity, 1e30, -1e30, -1, 0] {
            XCTAssertGreaterThanOrEqual(CurlTransfer.milliseconds(seconds), 1)
        }
    }

    // MARK: - The ledger's rows: an order's times and attempts, Google's refund clock

    func testOrdersWithAbsurdRows_haveARefundDeadline_aNextAttempt_aPriority_andAStatusLine() {
        let policy = RetryPolicy(baseSeconds: 10, maxSeconds: 3600, maxAttempts: 3, random: { 0.5 })
        for created in Self.extremes {
            for bought in [nil] + Self.extremes {
                for now in Self.extremes + [1_764_410_645] {
                    let verified = bought.map {
                        VerifiedPurchase(transactionId: "GPA.1", originalTransactionId: "GPA.1", productId: "gems", environment: "",
                                         quantity: 1, purchaseDateMs: $0, expiresDateMs: nil, grantKey: "GPA.1")
                    }
                    let order = Order(orderId: "o", userId: "u", productId: "gems", state: .pending, attempts: Int(Int32.max),
                                      nextAttemptAt: created, verified: verified, createdAt: created, updatedAt: created, store: .googlePlay)
                    XCTAssertNotNil(order.refundDeadline)
                    let next = Reconciler.nextAttempt(order, now: now, after: policy.delay(afterAttempt: order.attempts + 1))
                    XCTAssertGreaterThanOrEqual(next, min(now, order.refundDeadline!), "\(created) \(String(describing: bought)) \(now)")
                    _ = Reconciler.pacerPriority(of: order, now: now)
                    let deadline = RefundDeadline(store: .googlePlay, orderId: "o", state: .pending, refundAt: created, exact: false, delivered: false)
                    _ = deadline.isUrgent(now: now)
                    XCTAssertFalse(StatusView.deadlineText(deadline, now: now).isEmpty)
                }
            }
        }
    }

    func testRatesAndDrainTimes_summedFromPacerRows_areText() {
        // `pacer_buckets` rows are summed into a store's rate: a backend's row may make it anything.
        for rate in [1e-30, 1e30, -1e30, .infinity, -.infinity, .nan, 0, Double(Int64.max), Double(Int64.min)] {
            XCTAssertFalse(Pacer.formatRate(rate).isEmpty, "\(rate)")
            for due in [0, 1, Int.max] {
                XCTAssertFalse(DrainTime.text(due: due, rate: rate).isEmpty, "\(due) at \(rate)")
            }
        }
        XCTAssertEqual(DrainTime.duration(seconds: 1e31), "about \(Int.max / 60 / 24) d" + " \(Int.max / 60 % 24) h")
    }

    func testPacerSleep_ofANegativeOrNaNWait_isNone() {
        for seconds in [-1e30, -1, .nan, -.infinity, 0] {
            Pacer.sleep(seconds: seconds)
        }
    }
}
