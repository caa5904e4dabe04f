import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel

/// A pid only names a process inside one PID namespace of one boot: an owner is judged dead by
/// its pid only when host, boot id and PID namespace are ours; elsewhere the lease expiry decides.
final class LeaseOwnerTests: XCTestCase {
    let us = LeaseOwner.current
    let deadPid = Int32.max - 1

    func owner(pid: Int32, startTime: String, bootId: String?, pidNamespace: UInt64?) -> LeaseOwner {
        LeaseOwner(host: us.host, pid: pid, startTime: startTime, bootId: bootId, pidNamespace: pidNamespace)
    }

    func testCurrent_carriesTheBootIdAndPidNamespace() {
        XCTAssertNotNil(us.bootId)
        XCTAssertNotNil(us.pidNamespace)
    }

    func testSameHostBootAndNamespace_withADeadPid_isKnownDead() {
        XCTAssertTrue(owner(pid: deadPid, startTime: "1", bootId: us.bootId, pidNamespace: us.pidNamespace).isKnownDead)
    }

    func testSameHostBootAndNamespace_withItsPidNowAnotherProcess_isKnownDead() {
        XCTAssertTrue(owner(pid: us.pid, startTime: "not-our-start", bootId: us.bootId, pidNamespace: us.pidNamespace).isKnownDead)
    }

    func testAnotherPidNamespace_isNotKnownDead_whetherItsPidLooksLiveOrDeadHere() {
        let otherNamespace = (us.pidNamespace ?? 0) &+ 1
        XCTAssertFalse(owner(pid: us.pid, startTime: "not-our-start", bootId: us.bootId, pidNamespace: otherNamespace).isKnownDead)
        XCTAssertFalse(owner(pid: deadPid, startTime: "1", bootId: us.bootId, pidNamespace: otherNamespace).isKnownDead)
    }

    func testAnotherBoot_isNotKnownDead() {
        XCTAssertFalse(owner(pid: deadPid, startTime: "1", bootId: "another-boot", pidNamespace: us.pidNamespace).isKnownDead)
    }

    func testAnOwnerRecordedWithoutBootOrNamespace_isNotKnownDead_theLeaseExpiryDecides() {
        let old = LeaseOwner(host: us.host, pid: deadPid, leaseStart: "12345")
        XCTAssertNil(old.bootId)
        XCTAssertFalse(old.isKnownDead)
    }

    func testLeaseStart_roundTrips_andIsReadLeniently() {
        let full = owner(pid: 7, startTime: "999", bootId: "b-1", pidNamespace: 4026531836)
        XCTAssertEqual(full.leaseStart, "999;boot=b-1;pidns=4026531836")
        XCTAssertEqual(LeaseOwner(host: us.host, pid: 7, leaseStart: full.leaseStart), full)
        let odd = LeaseOwner(host: us.host, pid: 7, leaseStart: "999;future=1;pidns=notanumber;boot=b-2")
        XCTAssertEqual(odd.startTime, "999")
        XCTAssertEqual(odd.bootId, "b-2")
        XCTAssertNil(odd.pidNamespace)
    }

    /// ASCII text (what settle writes) is read byte by byte; any other text Character by Character:
    /// both read the same parts, and an empty or odd text is still read leniently.
    func testLeaseStart_readsTheSame_inASCIIAndInOtherText() {
        let ascii = LeaseOwner(host: us.host, pid: 7, leaseStart: "999;boot=b-1;pidns=42")
        let other = LeaseOwner(host: us.host, pid: 7, leaseStart: "99é;boot=b-é;pidns=42")
        XCTAssertEqual([ascii.startTime, ascii.bootId], ["999", "b-1"])
        XCTAssertEqual([other.startTime, other.bootId], ["99é", "b-é"])
        XCTAssertEqual([ascii.pidNamespace, other.pidNamespace], [42, 42])
        let empty = LeaseOwner(host: us.host, pid: 7, leaseStart: "")
        XCTAssertEqual(empty.startTime, "")
        XCTAssertNil(empty.bootId)
        let repeated = LeaseOwner(host: us.host, pid: 7, leaseStart: ";;boot=;boot=x;pidns=1;pidns=2;")
        XCTAssertEqual(repeated.startTime, "")
        XCTAssertEqual(repeated.bootId, "x", "the last part of a kind wins")
        XCTAssertEqual(repeated.pidNamespace, 2)
    }

    func testTheLedger_keepsTheWholeIdentityOfAClaim() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u-1", productId: world.coins, transactionId: "100"))
        let foreign = owner(pid: deadPid, startTime: "1", bootId: us.bootId, pidNamespace: (us.pidNamespace ?? 0) &+ 1)
        _ = try ledger.claim(orderId: "o-1", owner: foreign, leaseSeconds: 3600)
        XCTAssertEqual(try ledger.orderRecord("o-1")?.order.lease?.owner, foreign)
        let rescued = try ledger.rescue(owner: us)
        XCTAssertEqual(rescued.requeued, [], "a claim from another PID namespace waits for its lease to expire")
        world.time.advance(by: 3601)
        XCTAssertEqual(try ledger.rescue(owner: us).requeued, ["o-1"])
    }
}
