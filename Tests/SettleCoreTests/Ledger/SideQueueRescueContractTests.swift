import Foundation
import SettleLedger
import SettleModel
import SettleTesting
import XCTest

/// Issue 32, items 18 and 22, on both engines: a side queue's claim names its owner, so rescue
/// takes a dead predecessor's claim back at once; and a daemon that restarts replaces its own
/// dead registrations, so the pacer's share is not split among the dead.
extension LedgerContractTests {
    /// An App Store order delivered and finished: its Finish Transaction call is owed (the ledger's trigger).
    func finishedAppStoreOrder(_ store: any SettleLedger, _ id: String, transaction: String) throws {
        try enqueue(store, id, transaction: transaction)
        let claimed = try XCTUnwrap(try store.claim(orderId: id, owner: me, leaseSeconds: 60)?.order)
        _ = try store.recordVerified(orderId: id, owner: me, fence: claimed.fencingToken, match: .only(purchase(transaction)),
                                     deliveryLeaseSeconds: 60, history: entry)
        XCTAssertTrue(try store.markFinished(orderId: id, owner: me, fence: claimed.fencingToken,
                                             history: HistoryEntry(at: 0, kind: .delivery, outcome: "delivered")))
    }

    func testSideQueueClaim_ofADeadOwnerOfThisHost_isTakenBackAtOnce_aLiveOnesAndAnotherHostsWaitForTheirExpiry() throws {
        try onEachBackEnd { b in
            for (id, txn) in [("dead-pid", "1"), ("other-start", "2"), ("live-here", "3"), ("other-host", "4"), ("mine", "5")] {
                try finishedAppStoreOrder(b.store, id, transaction: txn)
            }
            let deadPid = LeaseOwner(host: me.host, pid: Int32.max - 1, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
            // This very pid, but another process start: the pid was reused after our predecessor died.
            let otherStart = LeaseOwner(host: me.host, pid: me.pid, startTime: "not-\(me.startTime)", bootId: me.bootId,
                                        pidNamespace: me.pidNamespace)
            // A live process of this host other than us: our parent (the test runner's).
            let parent = getppid()
            let liveHere = LeaseOwner(host: me.host, pid: parent, startTime: LeaseOwner.processStartTime(parent) ?? "?",
                                      bootId: me.bootId, pidNamespace: me.pidNamespace)
            let owners: [(String, LeaseOwner)] = [("1", deadPid), ("2", otherStart), ("3", liveHere), ("4", remote), ("5", me)]
            for (_, owner) in owners {
                XCTAssertEqual(try b.store.claimDueAppleFinishes(limit: 1, leaseSeconds: 900, owner: owner).count, 1, b.name)
            }
            XCTAssertTrue(try b.store.claimDueAppleFinishes(limit: 10, leaseSeconds: 900).isEmpty, "\(b.name): all claimed")
            let rescued = try b.store.rescue(owner: me)
            XCTAssertEqual(rescued.sideJobsTakenBack, 2, b.name)
            let again = try b.store.claimDueAppleFinishes(limit: 10, leaseSeconds: 900, owner: me)
            XCTAssertEqual(Set(again.map(\.transactionId)), ["1", "2"], "\(b.name): the dead owners' calls are due at once")
            XCTAssertTrue(again.allSatisfy { $0.claim == 3 }, "\(b.name): claimed anew, so the dead claim is fenced off")
            // The others wait for their expiry, as before.
            XCTAssertEqual(try b.store.rescue(owner: me).sideJobsTakenBack, 0, b.name)
            world.time.advance(by: 901)
            XCTAssertEqual(Set(try b.store.claimDueAppleFinishes(limit: 10, leaseSeconds: 900, owner: me).map(\.transactionId)),
                           ["1", "2", "3", "4", "5"], b.name)
            world.time.advance(by: -901)
        }
    }

    func testEverySideQueue_namesItsClaimsOwner_soRescueTakesADeadOnesBack() throws {
        try onEachBackEnd { b in
            let deadPid = LeaseOwner(host: me.host, pid: Int32.max - 1, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
            let now = world.time.unixSeconds
            let far = now + 900
            let owner = "claim_host = '\(me.host)', claim_pid = \(deadPid.pid), claim_start = '\(deadPid.leaseStart)', claim_expires_at = \(far)"
            // Rows as a dead daemon of this host left them, claimed for 15 minutes; one per queue.
            try finishedAppStoreOrder(b.store, "o-1", transaction: "1")
            try b.execute("UPDATE apple_finishes SET claim = 1, next_attempt_at = \(far), \(owner)")
            try b.execute("""
                INSERT INTO revocations(transaction_id, order_id, kind, state, attempts, next_attempt_at, claim, created_at, updated_at,
                                        claim_host, claim_pid, claim_start, claim_expires_at)
                VALUES ('r-1', 'o-1', 'REFUND', 'pending', 0, \(far), 1, \(now), \(now), '\(me.host)', \(deadPid.pid),
                        '\(deadPid.leaseStart)', \(far))
                """)
            let rescued = try b.store.rescue(owner: me)
            XCTAssertEqual(rescued.sideJobsTakenBack, 2, b.name)
            XCTAssertEqual(try b.store.claimDueRevocations(limit: 10, leaseSeconds: 900).map(\.0.transactionId), ["r-1"], b.name)
            XCTAssertEqual(try b.store.claimDueAppleFinishes(limit: 10, leaseSeconds: 900).map(\.transactionId), ["1"], b.name)
        }
    }

    func testDaemonRestarts_leaveOneLiveRegistrationForTheHost_andTheFullPacerShare() throws {
        try onEachBackEnd { b in
            // 30 daemons of this host killed with -9: each registered, none said it stopped.
            for n in 0..<30 {
                let killed = LeaseOwner(host: me.host, pid: Int32.max - 1 - Int32(n), startTime: "\(n)", bootId: me.bootId,
                                        pidNamespace: me.pidNamespace)
                try b.store.recordDaemonStarted(killed)
            }
            try b.store.recordDaemonStarted(me)
            XCTAssertEqual(try b.store.liveDaemons().map(\.owner), [me], b.name)
            XCTAssertEqual(try b.store.pacerHosts(besides: me), 1, "\(b.name): the whole rate is this host's")
            guard b.store.isShared else { return }
            // Another host's registration is not ours to judge: it counts until its heartbeat is old.
            try b.store.recordDaemonStarted(remote)
            XCTAssertEqual(try b.store.pacerHosts(besides: me), 2, b.name)
        }
    }
}

extension LedgerContractTests {
    /// A row naming pid 0 or a negative pid was not written by settle: kill(2) would read it as a
    /// process group, so its claim is never judged by it and waits for its expiry.
    func testSideQueueClaim_namingANonPositivePid_waitsForItsExpiry() throws {
        try onEachBackEnd { b in
            try finishedAppStoreOrder(b.store, "o-1", transaction: "1")
            let forged = LeaseOwner(host: me.host, pid: -999_999, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
            XCTAssertEqual(try b.store.claimDueAppleFinishes(limit: 1, leaseSeconds: 900, owner: forged).count, 1, b.name)
            XCTAssertEqual(try b.store.rescue(owner: me).sideJobsTakenBack, 0, b.name)
            XCTAssertTrue(try b.store.claimDueAppleFinishes(limit: 1, leaseSeconds: 900).isEmpty, b.name)
        }
    }
}

extension LedgerContractTests {
    /// A job whose outcome a process recorded with a backoff before it died keeps its backoff:
    /// only a claim still in flight (its due time still the claim's expiry) is taken back.
    func testSideQueueJob_whoseDeadOwnerRecordedABackoff_keepsItsBackoff() throws {
        try onEachBackEnd { b in
            try finishedAppStoreOrder(b.store, "o-1", transaction: "1")
            let deadPid = LeaseOwner(host: me.host, pid: Int32.max - 1, startTime: "1", bootId: me.bootId, pidNamespace: me.pidNamespace)
            let job = try XCTUnwrap(try b.store.claimDueAppleFinishes(limit: 1, leaseSeconds: 900, owner: deadPid).first, b.name)
            XCTAssertTrue(try b.store.recordAppleFinish(job, state: "pending", error: "503", nextAttemptAt: world.time.unixSeconds + 3600,
                                                        countsAttempt: false, history: HistoryEntry(at: 0, kind: .delivery, outcome: "x")))
            XCTAssertEqual(try b.store.rescue(owner: me).sideJobsTakenBack, 0, b.name)
            XCTAssertTrue(try b.store.claimDueAppleFinishes(limit: 1, leaseSeconds: 900).isEmpty, "\(b.name): still backing off")
        }
    }
}
