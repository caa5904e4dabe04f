import Foundation
import SettleApp
import SettleBase
import SettleTesting
import XCTest

/// `settle bind` (issue 36) through the binary against the simulated App Store Server API: a
/// `token_unverifiable` order fixed without SQL, a plain retry warned as recurring, and the
/// refusals that keep a purchase from being bound to the wrong person.
final class BindCommandTests: EndToEndTestCase {
    let aliceToken = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"

    override func setUpWithError() throws {
        try super.setUpWithError()
        try world.writeConfig(receiptAPI: false, serverAPI: true)
    }

    /// An order of `user`, naming no token, for a signed purchase whose appAccountToken is alice's:
    /// the pass sets it aside as token_unverifiable.
    func unverifiable(_ id: String, transaction: String, user: String) throws {
        let purchase = world.scriptTransaction(transaction, appAccountToken: aliceToken)
        let signed = try purchase.signed(at: Int64(Date().timeIntervalSince1970) * 1000)
        let path = try world.write("\(id).jws", signed + "\n")
        try settle(expecting: 0, ["enqueue", "--order", id, "--user", user, "--product", world.coins,
                                  "--signed-transaction-file", path])
    }

    func testBind_thenReconcile_finishesATokenUnverifiableOrder_andTheOperatorIsAudited() throws {
        try unverifiable("o-1", transaction: "2000000960000001", user: "u-alice")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1")["reason"], .string("token_unverifiable"))
        let status = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertTrue(status.contains("then settle bind o-1 --app-account-token TOKEN --note TICKET"), status)

        // A plain retry is warned as recurring, and it does recur.
        let retry = try settle(expecting: 0, ["retry", "o-1", "--note", "try again"])
        XCTAssertTrue(retry.stderr.contains("settle retry: warning: o-1 needed attention as token_unverifiable"),
                      retry.stderr)
        XCTAssertTrue(retry.stderr.contains("settle bind o-1 --app-account-token TOKEN --note TICKET"), retry.stderr)
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1")["reason"], .string("token_unverifiable"))
        XCTAssertTrue(world.deliveries.isEmpty)

        let bound = try settle(["bind", "o-1", "--app-account-token", aliceToken.uppercased(), "--note", "ticket 5"],
                               environment: ["USER": "alice", "SUDO_USER": ""])
        XCTAssertEqual(bound.status, 0, bound.stderr)
        XCTAssertTrue(bound.stdout.hasPrefix("bound sha256:"), bound.stdout)
        XCTAssertTrue(bound.stdout.hasSuffix("to o-1: pending, due now\n"), bound.stdout)
        XCTAssertEqual(try state("o-1"), "pending")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-1"), "finished")
        XCTAssertEqual(world.deliveries, ["2000000960000001 o-1"])

        let audit = try settle(expecting: 0, ["audit", "--json"]).stdout.split(separator: "\n")
            .map { try JSONValue.parse(String($0)) }
        let bind = try XCTUnwrap(audit.first { $0["action"] == .string("bind") })
        XCTAssertEqual(bind["actor"], .string("alice"))
        XCTAssertEqual(bind["subject"], .string("o-1"))
        XCTAssertEqual(bind["channel"], .string("cli"))
        XCTAssertTrue(try history("o-1").contains { $0["outcome"] == .string("account_token_bound") })
        XCTAssertFalse((bound.stdout + bound.stderr).lowercased().contains(aliceToken), "bind names its fingerprint")
        let story = try settle(expecting: 0, ["status", "o-1"]).stdout
        XCTAssertFalse(story.contains("bound app account token \(aliceToken)"), story)
    }

    func testBind_refusals_exit65NamingWhy_andUsage64() throws {
        try unverifiable("o-1", transaction: "2000000960000002", user: "u-alice")
        try unverifiable("o-2", transaction: "2000000960000003", user: "mallory")
        try settle(expecting: 0, ["reconcile"])
        try settle(expecting: 0, ["bind", "o-1", "--app-account-token", aliceToken, "--note", "ticket 5"])

        // Mallory's support ticket asks for alice's token on his order: it is alice's already.
        var result = try settle(expecting: 65,
                                ["bind", "o-2", "--app-account-token", aliceToken, "--note", "he says so"])
        XCTAssertTrue(result.stderr.contains("already bound to order o-1, another user's"), result.stderr)
        XCTAssertFalse(result.stderr.contains(aliceToken), result.stderr)
        result = try settle(expecting: 65, ["bind", "o-2", "--app-account-token", "alice", "--note", "n"])
        XCTAssertTrue(result.stderr.contains("is not a UUID"), result.stderr)
        result = try settle(expecting: 65, ["bind", "o-1", "--app-account-token", aliceToken, "--note", "again"])
        XCTAssertTrue(result.stderr.contains("order o-1 is pending; only needs_attention orders with reason "
                                             + "token_unverifiable"), result.stderr)
        XCTAssertEqual(try order("o-2")["reason"], .string("token_unverifiable"))

        try settle(expecting: 64, ["bind", "o-2", "--app-account-token", aliceToken])
        try settle(expecting: 64, ["bind", "o-2", "--note", "n"])
        try settle(expecting: 64, ["bind", "--app-account-token", aliceToken, "--note", "n"])
        let help = try settleWithoutConfig(["help", "bind"]).stdout
        XCTAssertTrue(help.contains("Usage: settle bind ORDER_ID --app-account-token"), help)
    }
}
