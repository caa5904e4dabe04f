import Foundation
import SettleLedger
import SettleModel
import SettleAppStoreSimulator
import SettleTesting
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Issue 32, item 18, with the binary: a Finish Transaction call claimed (for 15 minutes) by a
/// process of this host that was then killed with -9 goes out in the next pass at once.
final class SideQueueCrashTests: EndToEndTestCase {
    /// A real process of this host, killed with -9: its identity as a claim's owner.
    func killedProcess() throws -> LeaseOwner {
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        let pid = sleeper.processIdentifier
        let start = try XCTUnwrap(LeaseOwner.processStartTime(pid))
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        sleeper.waitUntilExit()
        let me = LeaseOwner.current
        return LeaseOwner(host: me.host, pid: pid, startTime: start, bootId: me.bootId, pidNamespace: me.pidNamespace)
    }

    func testFinishTransaction_heldByAKilledProcessOfThisHost_isSentByTheNextPass_notFifteenMinutesLater() throws {
        try world.writeConfig(receiptAPI: false, serverAPI: true)
        // The app's signed transaction, carrying the buyer's appAccountToken (the user id is that UUID).
        let user = "0d5b7c1e-6a7f-4a4e-9a3b-2f6c1d0e8a11"
        var t = SimulatedSignedTransaction(transactionId: "2000000950000021", productId: world.coins, bundleId: world.bundleId)
        t.appAccountToken = user
        world.simulator.script(transaction: t.transactionId, TransactionScript(transaction: t))
        let signed = try world.write("signed.jws", try t.signed(at: Int64(Date().timeIntervalSince1970 * 1000)))
        world.simulator.script(finish: [.error(status: 503, code: 5000000)])
        try settle(expecting: 0, ["enqueue", "--order", "o-1", "--user", user, "--product", world.coins,
                                  "--signed-transaction-file", signed, "--app-account-token", user])
        _ = try settle(expecting: 0, ["reconcile"])
        let verdict = try order("o-1")
        XCTAssertEqual(try state("o-1"), "finished", "\(verdict)")
        XCTAssertEqual(world.simulator.finishRequests.count, 1)
        // The call as a daemon killed while Apple held it left it: claimed for 15 minutes, by a dead process.
        let dead = try killedProcess()
        let now = Int64(Date().timeIntervalSince1970)
        try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite).execute("""
            UPDATE apple_finishes SET claim = claim + 1, next_attempt_at = \(now + 900), claim_host = '\(dead.host)',
                   claim_pid = \(dead.pid), claim_start = '\(dead.leaseStart)', claim_expires_at = \(now + 900)
            """)
        _ = try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(world.simulator.finishRequests.map(\.transactionId), ["2000000950000021", "2000000950000021"],
                       "the dead process's call went out in the next pass")
        XCTAssertEqual(try SQLiteLedger(readOnlyPath: world.ledgerPath).appleFinish(orderId: "o-1")?.state, "finished")
    }
}
