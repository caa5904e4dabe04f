import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger

/// What support commands and rows written outside settle may and may not do, on every back end
/// (issue 14: unclaimed purchases, hand grants, rows written in flight).
extension LedgerContractTests {
    func testRetry_ofAnOrderWithoutAUser_isRefusedPointingToAssign_andAssignGivesItItsBuyer() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1")
            try enqueue(b.store, "o-2", transaction: "101")
            try b.execute("UPDATE orders SET user_id = '', state = 'needs_attention', reason = 'unclaimed_purchase' WHERE order_id = 'o-1'")
            try b.execute("UPDATE orders SET user_id = ' ', state = 'rejected', reason = 'transaction_not_found' WHERE order_id = 'o-2'")
            for id in ["o-1", "o-2"] {
                XCTAssertThrowsError(try b.store.retry(orderIds: [id], note: "ticket"), b.name) { error in
                    XCTAssertTrue("\(error)".contains("settle assign \(id) --user USER_ID"), "\(b.name): \(error)")
                }
            }
            XCTAssertEqual(try state(b.store, "o-1"), .needsAttention, b.name)
            try b.store.assign(orderId: "o-1", userId: "u-42", note: "ticket 7")
            let assigned = try XCTUnwrap(try b.store.orderRecord("o-1"), b.name)
            XCTAssertEqual(assigned.order.state, .pending, b.name)
            XCTAssertEqual(assigned.order.userId, "u-42", b.name)
            XCTAssertEqual(assigned.history.last?.outcome, "assigned", b.name)
        }
    }

    func testResolveGrantedByHand_ofAnOrderHoldingNoGrant_recordsItsTransactionAsGrantedOutside_soItIsNeverDeliveredAgain() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1", transaction: "300")
            try b.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id = 'o-1'")
            XCTAssertEqual(try b.store.resolve(orderIds: ["o-1"], as: .grantedByHand, note: "coins in the admin tool").first?.1, .rejected, b.name)
            guard case .outside? = try b.store.grantHolder(of: purchase("300")) else { return XCTFail("\(b.name): no outside grant") }
            // The customer uploads the same purchase again: found granted, never delivered.
            try enqueue(b.store, "o-2", transaction: "300")
            let claim = try XCTUnwrap(try b.store.claim(orderId: "o-2", owner: me, leaseSeconds: 60)?.order, b.name)
            guard case .alreadyDelivered = try b.store.recordVerified(orderId: "o-2", owner: me, fence: claim.fencingToken,
                                                                     match: .only(purchase("300")), deliveryLeaseSeconds: 60,
                                                                     history: entry) else { return XCTFail(b.name) }
        }
    }

    func testResolveGrantedByHand_ofAnOrderNamingNoTransaction_requiresTransaction_andRecordsIt() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1", transaction: nil)
            try b.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id = 'o-1'")
            XCTAssertThrowsError(try b.store.resolve(orderIds: ["o-1"], as: .grantedByHand, note: "n"), b.name) { error in
                XCTAssertTrue("\(error)".contains("--transaction"), "\(b.name): \(error)")
            }
            XCTAssertEqual(try state(b.store, "o-1"), .needsAttention, "\(b.name): nothing changed")
            XCTAssertEqual(try b.store.resolve(orderIds: ["o-1"], as: .grantedByHand, note: "n", transaction: "777").first?.1, .rejected, b.name)
            guard case .outside? = try b.store.grantHolder(of: purchase("777")) else { return XCTFail("\(b.name): no outside grant") }
            XCTAssertTrue(try b.store.orderRecord("o-1")?.history.last?.detail?.contains("777 recorded as granted outside settle") == true, b.name)
        }
    }

    func testResolveGrantedByHand_ofAPurchaseAnotherOrderHolds_isRefused_andChangesNothing() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "holder", transaction: "500")
            let claim = try XCTUnwrap(try b.store.claim(orderId: "holder", owner: me, leaseSeconds: 60)?.order, b.name)
            _ = try b.store.recordVerified(orderId: "holder", owner: me, fence: claim.fencingToken, match: .only(purchase("500")),
                                           deliveryLeaseSeconds: 60, history: entry)
            try enqueue(b.store, "o-1", transaction: "500")
            try b.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id = 'o-1'")
            XCTAssertThrowsError(try b.store.resolve(orderIds: ["o-1"], as: .grantedByHand, note: "n"), b.name) { error in
                XCTAssertTrue("\(error)".contains("held by order holder"), "\(b.name): \(error)")
            }
            XCTAssertEqual(try state(b.store, "o-1"), .needsAttention, b.name)
        }
    }

    func testARowWrittenDelivering_withoutSettlesClaimOrGrant_isNeverDelivered() throws {
        try onEachBackEnd { b in
            // Written the way a backend may write rows: a forged "verified, delivering" order of a dead owner.
            try b.execute("""
                INSERT INTO orders(order_id, user_id, product_id, transaction_id, state, lease_host, lease_pid, lease_start, lease_expires_at,
                                   verified_transaction_id, original_transaction_id, verified_product_id, quantity, grant_key)
                VALUES ('forged', 'u-1', '\(world.coins)', '900', 'delivering', 'gone-host', 1, 'x', 0, '900', '900', '\(world.coins)', 1, '900')
                """)
            let quarantined = try b.store.quarantineMalformedRows()
            XCTAssertTrue(try b.store.rescue(owner: me).redeliver.isEmpty, b.name)
            let order = try XCTUnwrap(try b.store.orderRecord("forged")?.order, b.name)
            if b.store.isShared {
                // PostgreSQL forces a new row to pending: it is verified with Apple like any other.
                XCTAssertEqual(order.state, .pending, b.name)
                XCTAssertNil(order.verified, b.name)
                XCTAssertNil(order.lease, b.name)
                XCTAssertEqual(quarantined, [], b.name)
            } else {
                XCTAssertEqual(quarantined, ["forged"], b.name)
                XCTAssertEqual(order.state, .needsAttention, b.name)
                XCTAssertEqual(order.reason, "row_invalid", b.name)
            }
        }
    }

    func testAnOrderMovedToDelivering_withoutHoldingItsGrant_isSetAside_notRedelivered() throws {
        try onEachBackEnd { b in
            try enqueue(b.store, "o-1", transaction: "910")
            // Someone with UPDATE rights (not settle) moves it on as if Apple had confirmed it.
            try b.execute("""
                UPDATE orders SET state = 'delivering', lease_host = 'gone-host', lease_pid = 1, lease_start = 'x', lease_expires_at = 0,
                       verified_transaction_id = '910', original_transaction_id = '910', verified_product_id = product_id,
                       quantity = 1, grant_key = '910' WHERE order_id = 'o-1'
                """)
            XCTAssertEqual(try b.store.quarantineMalformedRows(), ["o-1"], b.name)
            XCTAssertTrue(try b.store.rescue(owner: me).redeliver.isEmpty, b.name)
            let order = try XCTUnwrap(try b.store.orderRecord("o-1")?.order, b.name)
            XCTAssertEqual(order.state, .needsAttention, b.name)
            XCTAssertEqual(order.reason, "row_invalid", b.name)
            // A delivery settle started itself holds its grant and is left alone.
            try enqueue(b.store, "o-2", transaction: "911")
            let claim = try XCTUnwrap(try b.store.claim(orderId: "o-2", owner: me, leaseSeconds: 60)?.order, b.name)
            _ = try b.store.recordVerified(orderId: "o-2", owner: me, fence: claim.fencingToken, match: .only(purchase("911")),
                                           deliveryLeaseSeconds: 60, history: entry)
            XCTAssertEqual(try b.store.quarantineMalformedRows(), [], b.name)
            XCTAssertEqual(try state(b.store, "o-2"), .delivering, b.name)
        }
    }

    func testOpeningForSupport_neverCreatesALedger_andRefusesOneThatNeedsAMigration() throws {
        let missing = world.folder + "/typo.sqlite3"
        XCTAssertThrowsError(try SQLiteLedger(currentPath: missing)) { error in
            XCTAssertTrue("\(error)".contains("no ledger at"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing))
        let old = world.folder + "/old.sqlite3"
        let database = try SQLiteDatabase(path: old, mode: .readWrite)
        try database.execute(LedgerSchema.migrations[0] + "; PRAGMA user_version = 1")
        try database.close()
        for open in [{ try SQLiteLedger(currentPath: old) }, { try SQLiteLedger(existingPath: old) }] as [() throws -> SQLiteLedger] {
            XCTAssertThrowsError(try open()) { error in
                guard case .olderSchema(found: 1, _) = error as? LedgerError else { return XCTFail("\(error)") }
            }
        }
        let fresh = try TestPostgres.freshSchema()
        schemas.append(fresh.schema)
        XCTAssertThrowsError(try PostgresLedger(url: fresh.url, access: .current)) { error in
            XCTAssertTrue("\(error)".contains("no settle ledger"), "\(error)")
        }
        XCTAssertThrowsError(try PostgresLedger(url: fresh.url, access: .readOnly), "still no ledger there")
    }

    func testAnOrderHoldingItsGrant_losesItOnlyToARefund_notToAnyOtherExclusion() throws {
        try onEachBackEnd { b in
            for (id, txn) in [("o-1", "920"), ("o-2", "921")] {
                try enqueue(b.store, id, transaction: txn)
                let first = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order, b.name)
                _ = try b.store.recordVerified(orderId: id, owner: me, fence: first.fencingToken, match: .only(purchase(txn)),
                                               deliveryLeaseSeconds: 60, history: entry)
                // The hook failed; the order waits, holding its grant, and is verified again.
                _ = try b.store.recordFailure(orderId: id, owner: me, fence: first.fencingToken, from: .delivering, error: "hook failed",
                                              countsAttempt: true, permanent: false, nextAttemptAt: 0, maxAttempts: 10,
                                              environment: nil, history: entry)
            }
            func reverify(_ id: String, _ txn: String, _ why: Exclusion) throws -> VerifiedResult {
                let claim = try XCTUnwrap(try b.store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order, b.name)
                return try b.store.recordVerified(orderId: id, owner: me, fence: claim.fencingToken,
                                                  match: Match(candidates: [], named: true, excluded: [txn: why]),
                                                  deliveryLeaseSeconds: 60, history: entry)
            }
            guard case .grantConflict = try reverify("o-1", "920", Exclusion(.userMismatch, "another user's token")) else {
                return XCTFail("\(b.name): an exclusion other than a refund must not reject an order holding its grant")
            }
            XCTAssertEqual(try state(b.store, "o-1"), .needsAttention, b.name)
            XCTAssertEqual(try b.store.grantHolder(transactionId: "920"), "o-1", b.name)
            guard case .rejected(.refunded, _) = try reverify("o-2", "921", Exclusion(.refunded, "Apple refunded it")) else {
                return XCTFail("\(b.name): a refund does take it away")
            }
        }
    }
}
