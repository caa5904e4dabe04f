import Foundation
import SettleApp
import SettleBase
import SettleLedger
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `settle transfer` and `settle redeliver` with the real binary, real command hooks and the
/// Apple simulator (issue 26): what reaches the hooks, under which keys, and what the ledger says.
final class TransferTests: EndToEndTestCase {
    let txn = "2000000000000771"

    /// Hook calls "<key> <order> <user>", grant and revoke routes alike, in order.
    var calls: [String] { ((try? String(contentsOfFile: world.folder + "/calls.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    /// The document the hook got under `key`.
    func document(_ key: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: world.folder + "/doc-\(key).json")))
    }

    /// Writes a route's hook: logs each call, keeps each document by key, and runs `extra`.
    func route(_ name: String, extra: String = "") throws -> String {
        try world.write(name, """
            #!/bin/sh
            payload=$(cat)
            user=$(printf '%s' "$payload" | sed -n 's/.*"user_id":"\\([^"]*\\)".*/\\1/p')
            echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID $user" >> "\(world.folder)/calls.log"
            printf '%s' "$payload" > "\(world.folder)/doc-$SETTLE_IDEMPOTENCY_KEY.json"
            \(extra)
            exit 0
            """, mode: 0o755)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try writeConfig(grantExtra: "")
    }

    func writeConfig(grantExtra: String, revokeRoute: Bool = true) throws {
        var delivery: [(String, JSONValue)] = [("command", .array([.string(try route("grant.sh", extra: grantExtra))])),
                                               ("timeout_seconds", .number(10))]
        if revokeRoute { delivery.append(("revoke_command", .array([.string(try route("revoke.sh"))]))) }
        try world.writeConfig(overrides: [("delivery", .object(delivery))])
    }

    func granted(_ orderId: String = "o-1", user: String = "u-1") throws {
        try enqueueValid(orderId, transaction: txn, user: user)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state(orderId), "finished")
    }

    func execute(_ sql: String) throws { try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite).execute(sql) }

    // MARK: - Transfer

    func testTransfer_revokesFromTheHolderThenGrantsToTheNewUser_underKeysOfTheirOwn_andTheOrderIsTheirs() throws {
        try granted()
        let asked = try settle(["transfer", "o-1", "--to-user", "u-2", "--note", "wrong account, ticket 9"],
                               environment: ["SUDO_USER": "alice"])
        XCTAssertEqual(asked.status, 0, asked.stderr)
        XCTAssertEqual(asked.stdout, "transfer of o-1 to u-2 requested: the next pass revokes it from u-1 and grants it to u-2\n")
        XCTAssertEqual(asked.stderr, "")
        let requested = try XCTUnwrap(try order("o-1")["support_actions"]?.arrayValue?.first)
        XCTAssertEqual(requested["state"], .string("pending"))
        XCTAssertEqual(requested["step"], .string("revoke"))
        XCTAssertEqual(requested["requested_by"], .string("alice via cli"))
        XCTAssertEqual(calls, ["\(txn) o-1 u-1"], "the command only records the request")

        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls, ["\(txn) o-1 u-1", "transfer:o-1:1:revoke o-1 u-1", "transfer:o-1:1:grant o-1 u-2"])
        let revoke = try document("transfer:o-1:1:revoke")
        XCTAssertEqual(revoke["event"], .string("revoke"))
        XCTAssertEqual(revoke["reason"], .string("transfer"))
        XCTAssertEqual(revoke["transaction_id"], .string(txn))
        XCTAssertEqual(revoke["revocation_type"], .string("REFUND_FULL"))
        XCTAssertEqual(revoke["refund_kind"], .null)
        XCTAssertEqual(revoke["transfer"]?["from_user"], .string("u-1"))
        XCTAssertEqual(revoke["transfer"]?["to_user"], .string("u-2"))
        let grant = try document("transfer:o-1:1:grant")
        XCTAssertEqual(grant["event"], .string("grant"))
        XCTAssertEqual(grant["user_id"], .string("u-2"))
        XCTAssertEqual(grant["idempotency_key"], .string("transfer:o-1:1:grant"))
        XCTAssertEqual(grant["grant"]?["coins"], .number(100))
        XCTAssertEqual(grant["transfer"]?["number"], .number(1))

        let after = try order("o-1")
        XCTAssertEqual(after["user_id"], .string("u-2"))
        XCTAssertEqual(after["state"], .string("finished"))
        let action = try XCTUnwrap(after["support_actions"]?.arrayValue?.first)
        XCTAssertEqual(action["state"], .string("done"))
        assertTime(action["revoked_at"], nullable: false, "revoked_at")
        assertTime(action["granted_at"], nullable: false, "granted_at")
        let outcomes = (after["history"]?.arrayValue ?? []).compactMap { $0["outcome"]?.looseString }
        XCTAssertEqual(Array(outcomes.suffix(3)), ["transfer_requested", "transfer_revoked", "transfer_granted"])
        let detail = (after["history"]?.arrayValue ?? []).first { $0["outcome"] == .string("transfer_requested") }?["detail"]?.looseString
        XCTAssertEqual(detail, "transfer 1 to u-2 (from u-1) requested by alice via cli: wrong account, ticket 9")
        let text = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertTrue(text.contains("transfer 1 from u-1 to u-2, requested by alice via cli"), text)
        XCTAssertTrue(text.contains("revoke done") && text.contains("grant done"), text)
        XCTAssertEqual(try listedOrderIds(["--user", "u-2"]), ["o-1"])

        // Done is done: the next pass sends nothing.
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls.count, 3)
        // A second transfer gets keys of its own.
        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-3", "--note", "ticket 10"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(Array(calls.suffix(2)), ["transfer:o-1:2:revoke o-1 u-2", "transfer:o-1:2:grant o-1 u-3"])
    }

    /// Issue 36, bug 10: a customer's order survives its transfer in a search by their user id.
    func testStatusByUser_findsAnOrderTheUserGaveAway_aswellAsItsNewHolder_andNoStranger() throws {
        try granted()
        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "ticket 9"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try listedOrderIds(["--user", "u-1"]), ["o-1"], "the buyer still finds what they bought")
        XCTAssertEqual(try listedOrderIds(["--user", "u-2"]), ["o-1"])
        XCTAssertEqual(try listedOrderIds(["--user", "u-9"]), [])
        let text = try settle(expecting: 0, ["status", "--user", "u-1"]).stdout
        XCTAssertTrue(text.contains("o-1"), text)
        // The customer view (issue 36) says how it is theirs, and who holds it now.
        XCTAssertTrue(text.contains("customer u-1: 1 order\n  o-1  finished"), text)
        XCTAssertTrue(text.contains("    bought it; transferred it to u-2; holder now: u-2\n"), text)
        XCTAssertTrue(text.contains("    support: transfer 1 from u-1 to u-2: done "), text)
        let received = try settle(expecting: 0, ["status", "--user", "u-2"]).stdout
        XCTAssertTrue(received.contains("    received it from u-1 by transfer; holds it now\n"), received)
        let json = try statusJSON(["--user", "u-2"])
        XCTAssertEqual(json["customer"]?["orders"]?.arrayValue?.first?["holder"], .string("u-2"))
    }

    func testTransfer_isRefused_forWhatWasNeverGranted_theSameUser_oneInProgress_andWithoutItsFlags() throws {
        try enqueueForged("forged")
        try enqueueValid("waiting", transaction: "2000000000000772")
        try settle(expecting: 0, ["reconcile", "--order", "forged"])
        let forged = try settle(["transfer", "forged", "--to-user", "u-2", "--note", "n"])
        XCTAssertEqual(forged.status, 65)
        XCTAssertTrue(forged.stderr.contains("order forged was never granted (rejected, receipt_invalid); nothing to transfer"), forged.stderr)
        XCTAssertEqual(try settle(["transfer", "waiting", "--to-user", "u-2", "--note", "n"]).status, 65, "pending: never granted yet")
        XCTAssertEqual(try settle(["transfer", "nope", "--to-user", "u-2", "--note", "n"]).status, 65)

        try granted()
        let same = try settle(["transfer", "o-1", "--to-user", "u-1", "--note", "n"])
        XCTAssertEqual(same.status, 65)
        XCTAssertTrue(same.stderr.contains("already belongs to user u-1"), same.stderr)
        let missingUser = try settle(["transfer", "o-1", "--note", "n"])
        XCTAssertEqual(missingUser.status, 64)
        XCTAssertTrue(missingUser.stderr.contains("--to-user USER_ID is required"), missingUser.stderr)
        XCTAssertEqual(try settle(["transfer", "o-1", "--to-user", "u-2"]).status, 64)
        XCTAssertEqual(try settle(["transfer", "o-1", "--to-user", "u-2", "--note", "  "]).status, 64)
        XCTAssertEqual(try settle(["redeliver", "o-1"]).status, 64)

        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "ticket 1"])
        let second = try settle(["transfer", "o-1", "--to-user", "u-3", "--note", "ticket 2"])
        XCTAssertEqual(second.status, 65)
        XCTAssertTrue(second.stderr.contains("has transfer 1 to u-2"), second.stderr)
        XCTAssertEqual(try settle(["redeliver", "o-1", "--note", "n"]).status, 65, "nor a redelivery while a transfer is open")
        XCTAssertEqual(try order("o-1")["support_actions"]?.arrayValue?.count, 1, "refusals change nothing")
    }

    func testTransfer_whoseGrantFailsOnce_resumesWithTheGrantUnderTheSameKey_andNeverRevokesAgain() throws {
        try granted()
        try writeConfig(grantExtra: """
            case "$SETTLE_IDEMPOTENCY_KEY" in transfer:*)
              if [ ! -e "\(world.folder)/failed-once" ]; then : > "\(world.folder)/failed-once"; echo "wallet down" >&2; exit 75; fi ;;
            esac
            """)
        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "ticket 3"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(Array(calls.dropFirst()), ["transfer:o-1:1:revoke o-1 u-1", "transfer:o-1:1:grant o-1 u-2"])
        let waiting = try order("o-1")
        XCTAssertEqual(waiting["user_id"], .string("u-1"), "not the new user's until the grant is done")
        let action = try XCTUnwrap(waiting["support_actions"]?.arrayValue?.first)
        XCTAssertEqual(action["state"], .string("pending"))
        XCTAssertEqual(action["step"], .string("grant"))
        XCTAssertEqual(action["attempts"], .number(1))
        XCTAssertTrue(action["last_error"]?.looseString?.contains("exit 75") == true, "\(action)")
        let text = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertTrue(text.contains("pending at step grant") && text.contains("revoke done") && text.contains("grant not done"), text)

        // Not due yet: a pass sends nothing. Once due, only the grant, under the same key.
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls.count, 3)
        try execute("UPDATE support_actions SET next_attempt_at = 0")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(Array(calls.dropFirst()), ["transfer:o-1:1:revoke o-1 u-1", "transfer:o-1:1:grant o-1 u-2",
                                                  "transfer:o-1:1:grant o-1 u-2"])
        XCTAssertEqual(try order("o-1")["user_id"], .string("u-2"))
    }

    func testTransfer_killedWith9DuringTheGrant_resumesWithTheGrantUnderTheSameKey_andNeverRevokesAgain() throws {
        try granted()
        let pidPath = world.folder + "/hook.pid"
        // The transfer's first grant call publishes its pid (it leads its own process group) and hangs.
        try writeConfig(grantExtra: """
            case "$SETTLE_IDEMPOTENCY_KEY" in transfer:*)
              if [ ! -e "\(world.folder)/first-call" ]; then
                : > "\(world.folder)/first-call"; echo $$ > "\(pidPath).tmp" && mv "\(pidPath).tmp" "\(pidPath)"; sleep 30
              fi ;;
            esac
            """)
        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "ticket 5"])
        let running = try SettleBinary.start(["reconcile", "--config", world.configPath], workingDirectory: world.folder,
                                             outputFolder: world.folder)
        XCTAssertTrue(eventually(within: 20) { FileManager.default.fileExists(atPath: pidPath) || !running.isRunning })
        XCTAssertTrue(running.isRunning, "settle ended before it could be killed: \(running.wait())")
        running.send(SIGKILL)
        _ = running.wait()
        XCTAssertTrue(running.wasKilledBySignal)
        let hookPid = try XCTUnwrap(Int32(String(contentsOfFile: pidPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        _ = kill(-hookPid, SIGKILL)
        _ = kill(hookPid, SIGKILL)

        let action = try XCTUnwrap(try order("o-1")["support_actions"]?.arrayValue?.first)
        XCTAssertEqual([action["state"], action["step"]], [.string("pending"), .string("grant")], "the revoke was recorded before the grant ran")
        // The dead process's claim runs out (as after claimSeconds); the next pass takes it.
        try execute("UPDATE support_actions SET next_attempt_at = 0")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(Array(calls.dropFirst()), ["transfer:o-1:1:revoke o-1 u-1", "transfer:o-1:1:grant o-1 u-2",
                                                  "transfer:o-1:1:grant o-1 u-2"])
        XCTAssertEqual(try order("o-1")["user_id"], .string("u-2"))
    }

    func testTransfer_refusedByTheHook_waitsForAPerson_visibly_andAskingAgainResumesIt() throws {
        try granted()
        try writeConfig(grantExtra: """
            case "$SETTLE_IDEMPOTENCY_KEY" in transfer:*:grant) [ -e "\(world.folder)/fixed" ] || exit 65 ;; esac
            """)
        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "ticket 4"])
        try settle(expecting: 0, ["reconcile"])
        let action = try XCTUnwrap(try order("o-1")["support_actions"]?.arrayValue?.first)
        XCTAssertEqual(action["state"], .string("waiting"))
        XCTAssertTrue(action["last_error"]?.looseString?.contains("exit 65") == true, "\(action)")
        XCTAssertTrue(try settle(expecting: 0, ["status", "o-1"]).stdout.contains("WAITING for a person at step grant"))
        let overview = try settle(expecting: 0, ["status"]).stdout
        XCTAssertTrue(overview.contains("support actions waiting for a person: 1 (o-1; settle status ORDER says which step and why)"), overview)
        XCTAssertEqual(try statusJSON()["support_actions_waiting"], .number(1))
        let other = try settle(["transfer", "o-1", "--to-user", "u-3", "--note", "n"])
        XCTAssertEqual(other.status, 65)
        XCTAssertTrue(other.stderr.contains("waits for a person"), other.stderr)

        try world.write("fixed", "")
        let resumed = try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "hook fixed"])
        XCTAssertEqual(resumed.stdout, "transfer 1 of o-1 to u-2 resumed: the next pass carries it on\n")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls.filter { $0.hasPrefix("transfer:o-1:1:revoke") }.count, 1, "revoked once")
        XCTAssertEqual(try statusJSON()["support_actions_waiting"], .number(0))
        XCTAssertEqual(try order("o-1")["user_id"], .string("u-2"))
    }

    func testTransfer_withoutARevokeRoute_waitsForOne_andNothingGoesToTheGrantRoute() throws {
        try writeConfig(grantExtra: "", revokeRoute: false)
        try granted()
        let asked = try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "n"])
        XCTAssertTrue(asked.stderr.contains("warning: no revoke route is configured"), asked.stderr)
        try settle(expecting: 0, ["reconcile"])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls, ["\(txn) o-1 u-1"])
        let action = try XCTUnwrap(try order("o-1")["support_actions"]?.arrayValue?.first)
        XCTAssertEqual(action["state"], .string("pending"))
        XCTAssertTrue(action["last_error"]?.looseString?.contains("no revoke route configured") == true, "\(action)")
    }

    // MARK: - Redeliver

    func testRedeliver_resendsTheOriginalGrant_underItsKey_withTheSameDocument() throws {
        try granted()
        let original = try String(contentsOfFile: world.folder + "/doc-\(txn).json", encoding: .utf8)
        let asked = try settle(["redeliver", "o-1", "--note", "backend restored from backup"], environment: ["SUDO_USER": "bob"])
        XCTAssertEqual(asked.status, 0, asked.stderr)
        XCTAssertEqual(asked.stdout, "redelivery of o-1 requested: the next pass re-sends its grant under its original key \(txn)\n")
        XCTAssertEqual(calls.count, 1)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls, ["\(txn) o-1 u-1", "\(txn) o-1 u-1"])
        XCTAssertEqual(try String(contentsOfFile: world.folder + "/doc-\(txn).json", encoding: .utf8), original, "the same document")
        let history = try history("o-1")
        XCTAssertEqual(history.first { $0["outcome"] == .string("redeliver_requested") }?["detail"]?.looseString,
                       "redeliver 1 of its grant (key \(txn)) requested by bob via cli: backend restored from backup")
        let resent = try XCTUnwrap(history.last)
        XCTAssertEqual(resent["outcome"], .string("redelivered"))
        XCTAssertEqual(resent["hook_exit"], .number(0))
        let text = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertTrue(text.split(separator: "\n").contains { $0.contains(" redelivered ") && $0.contains("hook exit 0") }, text)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls.count, 2, "once")
    }

    func testRedeliver_afterATransfer_resendsTheTransfersGrant_andIsRefusedForWhatWasNeverGranted() throws {
        try granted()
        try settle(expecting: 0, ["transfer", "o-1", "--to-user", "u-2", "--note", "n"])
        try settle(expecting: 0, ["reconcile"])
        let asked = try settle(expecting: 0, ["redeliver", "o-1", "--note", "lost it"])
        XCTAssertTrue(asked.stdout.contains("its transfer's grant to u-2 under its original key transfer:o-1:1:grant"), asked.stdout)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(calls.last, "transfer:o-1:1:grant o-1 u-2")
        XCTAssertEqual(calls.count, 4)

        try enqueueForged("forged")
        try settle(expecting: 0, ["reconcile"])
        let refused = try settle(["redeliver", "forged", "--note", "n"])
        XCTAssertEqual(refused.status, 65)
        XCTAssertTrue(refused.stderr.contains("was never granted through the hook"), refused.stderr)
    }

    func testHelp_namesBothCommands() throws {
        XCTAssertTrue(try settleWithoutConfig(["transfer", "--help"]).stdout.contains("transfer:ORDER_ID:N:revoke"))
        XCTAssertTrue(try settleWithoutConfig(["redeliver", "--help"]).stdout.contains("original idempotency key"))
    }
}
