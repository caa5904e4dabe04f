import Foundation
import SettleBase
import SettleTesting
import XCTest
@testable import SettleModel
import SettleAppStore
@testable import SettleAppStoreModule
@testable import SettleAppStore
@testable import SettleLedger

/// Apple's notifications of purchases without the user's token, bound by the Apple Account's
/// `appTransactionId` that a signed AppTransaction linked to a user, on every back end.
extension LedgerContractTests {
    func accountNotification(_ type: String, transaction id: String, account: String?, familyShared: Bool = false,
                             token: String? = nil) throws -> AppleNotification {
        var members: [(String, JSONValue)] = [
            ("transactionId", .string(id)), ("originalTransactionId", .string(id)), ("bundleId", .string(world.bundleId)),
            ("productId", .string(world.coins)), ("purchaseDate", .number(1_000)), ("environment", .string("Production")),
            ("inAppOwnershipType", .string(familyShared ? "FAMILY_SHARED" : "PURCHASED")),
        ]
        if let account { members.append(("appTransactionId", .string(account))) }
        if let token { members.append(("appAccountToken", .string(token))) }
        let uuid = UUID().uuidString.lowercased()
        // The ledger reads a stored signed transaction's ids as lookup keys only: any compact JWS shape does.
        let jws = "eyJhbGciOiJFUzI1NiJ9." + Base64URL.encode(Data(JSONValue.object(members).serialized().utf8)) + ".c2ln"
        return AppleNotification(uuid: uuid, type: type, subtype: nil, environment: .production, signedDateMs: 2_000,
                                 transaction: try SignedTransaction(decoding: .object(members)), signedTransactionInfo: jws,
                                 consumptionRequestReason: nil, revocationReason: nil, signedPayload: "signed-\(uuid)")
    }

    func account(_ id: String) -> AppTransaction {
        AppTransaction(appTransactionId: id, bundleId: world.bundleId, environment: .production, signedDateMs: 1_000)
    }

    func testIngest_aTokenlessPurchaseOfALinkedAppleAccount_isItsUsersOrder_anUnlinkedOneStaysUnclaimed_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            XCTAssertEqual(try b.store.linkAppTransaction(account("a-1"), userId: "u-member", source: "link", orderId: nil),
                           AppTransactionLink(created: true, otherUsers: []), b.name)
            XCTAssertEqual(try b.store.linkAppTransaction(account("a-1"), userId: "u-member", source: "link", orderId: nil).created,
                           false, b.name)
            var result = try b.store.ingest(try accountNotification("ONE_TIME_CHARGE", transaction: "801", account: "a-1"),
                                            source: "endpoint", rules: rules)
            XCTAssertEqual(result.outcome, "order_created", b.name)
            XCTAssertEqual(try b.store.orderRecord("apple-801")?.order.userId, "u-member", b.name)

            result = try b.store.ingest(try accountNotification("ONE_TIME_CHARGE", transaction: "802", account: "a-2"),
                                        source: "endpoint", rules: rules)
            XCTAssertEqual(result.outcome, "unclaimed", b.name)
            XCTAssertTrue(result.detail?.contains("its appTransactionId a-2 is linked to no user (settle link)") == true,
                          "\(b.name): \(result.detail ?? "")")
        }
    }

    func testIngest_aFamilyMembersSharedPurchase_isBoundToTheMemberByTheirAppTransactionId_neverToTheBuyersToken_onEveryBackEnd() throws {
        let buyer = "0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f"
        try onEachBackEnd { b in
            try b.store.linkAppTransaction(account("a-member"), userId: "u-member", source: "link", orderId: nil)
            var result = try b.store.ingest(try accountNotification("SUBSCRIBED", transaction: "811", account: "a-member",
                                                                    familyShared: true, token: buyer),
                                            source: "endpoint", rules: rules)
            XCTAssertEqual(result.outcome, "order_created", b.name)
            XCTAssertEqual(try b.store.orderRecord("apple-811")?.order.userId, "u-member", b.name)
            XCTAssertNil(try b.store.orderRecord("apple-811")?.order.appAccountToken, "\(b.name): the buyer's token is not the member's")

            // Another member, not linked: the buyer's token on the copy binds it to nobody.
            result = try b.store.ingest(try accountNotification("SUBSCRIBED", transaction: "812", account: "a-other",
                                                                familyShared: true, token: buyer),
                                        source: "endpoint", rules: rules)
            XCTAssertEqual(result.outcome, "unclaimed", b.name)
            XCTAssertEqual(try b.store.orderRecord("apple-812")?.order.userId, "", b.name)

            // Sharing stops: Apple revokes the member's copy; the member's grant is taken back.
            let claimed = try XCTUnwrap(try b.store.claim(orderId: "apple-811", owner: me, leaseSeconds: 60), b.name)
            _ = try b.store.recordVerified(orderId: "apple-811", owner: me, fence: claimed.order.fencingToken,
                                           match: Match(candidates: [purchase("811")], named: true), deliveryLeaseSeconds: 60,
                                           history: entry)
            XCTAssertTrue(try b.store.markFinished(orderId: "apple-811", owner: me, fence: claimed.order.fencingToken, history: entry), b.name)
            result = try b.store.ingest(try accountNotification("REVOKE", transaction: "811", account: "a-member", familyShared: true),
                                        source: "endpoint", rules: rules)
            XCTAssertEqual(result.outcome, "revoke_queued", b.name)
            let revokes = try b.store.claimDueRevocations(limit: 10, leaseSeconds: 60)
            XCTAssertEqual(revokes.map(\.1.userId), ["u-member"], b.name)
        }
    }

    func testLinkAppTransaction_oneAppleAccountLinkedToTwoUsers_bindsItsPurchasesToNeither_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try b.store.linkAppTransaction(account("a-shared"), userId: "u-1", source: "link", orderId: nil)
            XCTAssertEqual(try b.store.linkAppTransaction(account("a-shared"), userId: "u-2", source: "order", orderId: "o-2"),
                           AppTransactionLink(created: true, otherUsers: ["u-1"]), b.name)
            XCTAssertEqual(try b.store.linkedUsers(appTransactionIds: ["a-shared", "a-none"]), ["a-shared": ["u-1", "u-2"]], b.name)
            let result = try b.store.ingest(try accountNotification("ONE_TIME_CHARGE", transaction: "821", account: "a-shared"),
                                            source: "endpoint", rules: rules)
            XCTAssertEqual(result.outcome, "unclaimed", b.name)
            XCTAssertTrue(result.detail?.contains("is linked to more than one user (u-1, u-2)") == true, "\(b.name): \(result.detail ?? "")")
        }
    }

    func testLink_ofAnAccountWhosePurchaseSettleGrantedToAnotherUser_isRefused_andAssignsNothing_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            try grantedOrder(b.store, "o-alice", transaction: "830")
            let payload = Base64URL.encode(Data(#"{"transactionId":"830","appTransactionId":"a-alice"}"#.utf8))
            try b.execute("UPDATE orders SET signed_transaction = 'e30.\(payload).c2ln' WHERE order_id = 'o-alice'")
            XCTAssertThrowsError(try b.store.linkAppTransaction(account("a-alice"), userId: "u-bob", source: "link", orderId: nil), b.name) {
                XCTAssertTrue("\($0)".contains("appTransactionId a-alice is the Apple Account of user u-1"), "\(b.name): \($0)")
            }
            XCTAssertEqual(try b.store.linkedUsers(appTransactionIds: ["a-alice"]), [:], "\(b.name): nothing linked")
            XCTAssertEqual(try b.store.linkAppTransaction(account("a-alice"), userId: "u-1", source: "link", orderId: nil).created, true,
                           "\(b.name): the buyer's own link")
        }
    }

    /// The evidence is read a page at a time (`AppTransactionEvidence.page`), never the whole
    /// ledger at once: an order that names the account on the third page refuses the link as one
    /// on the first would, and an account no order names is linked after every page was read.
    func testLink_findsTheEvidenceBeyondTheFirstPagesOfGrantedOrders_onEveryBackEnd() throws {
        let decoys = AppTransactionEvidence.page * 2 + 10
        let decoyPayload = Base64URL.encode(Data(#"{"transactionId":"1","appTransactionId":"a-decoy"}"#.utf8))
        try onEachBackEnd { b in
            try b.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(decoys))
                INSERT INTO orders(order_id, user_id, product_id, transaction_id, store, signed_transaction)
                SELECT 'o-decoy-' || (1000 + i), 'u-decoy', 'coins', 'd-' || i, 'app_store', 'e30.\(decoyPayload).c2ln' FROM n
                """)
            try b.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(decoys))
                INSERT INTO grants(grant_key, transaction_id, order_id, source, granted_at)
                SELECT 'd-' || i, 'd-' || i, 'o-decoy-' || (1000 + i), 'settle', 0 FROM n
                """)
            try grantedOrder(b.store, "o-zz-alice", transaction: "840")
            let payload = Base64URL.encode(Data(#"{"transactionId":"840","appTransactionId":"a-alice"}"#.utf8))
            try b.execute("UPDATE orders SET signed_transaction = 'e30.\(payload).c2ln' WHERE order_id = 'o-zz-alice'")

            XCTAssertThrowsError(try b.store.linkAppTransaction(account("a-alice"), userId: "u-bob", source: "link", orderId: nil), b.name) {
                XCTAssertTrue("\($0)".contains("appTransactionId a-alice is the Apple Account of user u-1: settle granted its purchase "
                                                + "o-zz-alice"), "\(b.name): \($0)")
            }
            XCTAssertThrowsError(try b.store.linkAppTransaction(account("a-decoy"), userId: "u-bob", source: "link", orderId: nil), b.name) {
                XCTAssertTrue("\($0)".contains("is the Apple Account of user u-decoy"), "\(b.name): \($0)")
            }
            XCTAssertEqual(try b.store.linkAppTransaction(account("a-nobody"), userId: "u-bob", source: "link", orderId: nil).created,
                           true, "\(b.name): an account no granted order names is linked")
        }
    }

    func testLinkAppTransaction_assignsTheAccountsPurchasesThatAppleReportedUnclaimed_toTheUser_onEveryBackEnd() throws {
        try onEachBackEnd { b in
            for id in ["831", "832"] {
                XCTAssertEqual(try b.store.ingest(try accountNotification("ONE_TIME_CHARGE", transaction: id, account: "a-late"),
                                                  source: "endpoint", rules: rules).outcome, "unclaimed", b.name)
            }
            _ = try b.store.ingest(try accountNotification("ONE_TIME_CHARGE", transaction: "833", account: "a-someone-else"),
                                   source: "endpoint", rules: rules)
            let link = try b.store.linkAppTransaction(account("a-late"), userId: "u-late", source: "link", orderId: nil)
            XCTAssertEqual(link.assigned, ["apple-831", "apple-832"], b.name)
            let record = try XCTUnwrap(try b.store.orderRecord("apple-831"), b.name)
            XCTAssertEqual(record.order.state, .pending, b.name)
            XCTAssertEqual(record.order.userId, "u-late", b.name)
            XCTAssertEqual(record.history.last?.outcome, "assigned", b.name)
            XCTAssertEqual(try state(b.store, "apple-833"), .needsAttention, b.name)
            XCTAssertEqual(try b.store.linkAppTransaction(account("a-late"), userId: "u-late", source: "link", orderId: nil).assigned, [],
                           b.name)
        }
    }
}
