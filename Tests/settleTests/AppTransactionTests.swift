import Foundation
import SettleApp
import SettleBase
import SettleAppStoreSimulator
import SettleTesting
import XCTest

/// Purchases without the user's appAccountToken (offer codes, purchases in the App Store, a
/// family member's shared ones), bound through the built binary by the Apple Account's
/// `appTransactionId` once a signed AppTransaction linked it to a user.
final class AppTransactionTests: EndToEndTestCase {
    let buyer = "0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f"
    let member = "u-member"

    override func setUpWithError() throws {
        try super.setUpWithError()
        // Tokenless signed proofs are refused, so only a binding grants them.
        try world.writeConfig(receiptAPI: false, serverAPI: true, overrides: [
            ("user_binding", .object([("app_account_token", .string("user_id")), ("tokenless_signed_proofs", .string("refuse"))])),
        ])
    }

    var nowMs: Int64 { Int64(Date().timeIntervalSince1970) * 1000 }

    /// A transaction of the Apple Account `account`, scripted on the simulated Server API; its
    /// device-signed JWS in a file.
    func purchase(_ id: String, account: String, familyShared: Bool = false, token: String? = nil) throws -> String {
        var t = SimulatedSignedTransaction(transactionId: id, productId: world.coins, bundleId: world.bundleId)
        t.appTransactionId = account
        t.appAccountToken = token
        if familyShared { t.inAppOwnershipType = "FAMILY_SHARED" }
        world.simulator.script(transaction: id, TransactionScript(transaction: t))
        return try world.write("signed-\(id).jws", try t.signed(at: nowMs))
    }

    func appTransaction(_ account: String, bundleId: String? = nil, receiptType: String = "Production") throws -> String {
        let app = SimulatedAppTransaction(appTransactionId: account, bundleId: bundleId ?? world.bundleId, receiptType: receiptType)
        return try world.write("app-\(account)-\(bundleId ?? "ours").jws", try app.signed(at: nowMs))
    }

    func testEnqueue_aTokenlessPurchaseWithItsUsersSignedAppTransaction_isBoundAndFinished_andWithoutOne_isRefused() throws {
        try settle(expecting: 0, ["enqueue", "--order", "o-bare", "--user", "u-7", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000001", account: "7001")])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-bare")["reason"], .string("proof_unbound"), "no link yet: nothing ties it to u-7")

        try settle(expecting: 0, ["enqueue", "--order", "o-linked", "--user", "u-7", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000002", account: "7001"),
                                  "--app-transaction-file", "-"],
                   stdin: Data(try String(contentsOfFile: try appTransaction("7001"), encoding: .utf8).utf8))
        let preview = try settle(expecting: 0, ["reconcile", "--dry-run"]).stdout
        XCTAssertTrue(preview.contains("o-linked: would grant transaction 2000000970000002"), preview)
        XCTAssertEqual(try ledgerRows(["app_transactions"])["app_transactions"] ?? [], [], "a dry run links nothing")
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-linked"), "finished")
        XCTAssertEqual(world.deliveries, ["2000000970000002 o-linked"])

        // Learned once, the account binds the user's later tokenless purchases by itself.
        try settle(expecting: 0, ["enqueue", "--order", "o-later", "--user", "u-7", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000003", account: "7001")])
        // Another user naming that account's purchase is not its buyer.
        try settle(expecting: 0, ["enqueue", "--order", "o-stranger", "--user", "u-8", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000004", account: "7001")])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-later"), "finished")
        XCTAssertEqual(try order("o-stranger")["reason"], .string("user_mismatch"))
        let shown = try settle(expecting: 0, ["status", "o-stranger"]).stdout
        XCTAssertTrue(shown.contains("appTransactionId 7001 is linked to user u-7, not u-8"), shown)
    }

    func testEnqueue_anAppTransactionThatDoesNotVerify_rejectsTheOrder_andLinksNothing() throws {
        try settle(expecting: 0, ["enqueue", "--order", "o-forged", "--user", "u-7", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000011", account: "7011"),
                                  "--app-transaction-file", try appTransaction("7011", bundleId: "com.example.other")])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-forged")["reason"], .string("bundle_mismatch"))
        try settle(expecting: 0, ["enqueue", "--order", "o-after", "--user", "u-7", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000012", account: "7011")])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-after")["reason"], .string("proof_unbound"))
        XCTAssertEqual(world.deliveries, [])
    }

    /// The first presenter of a signed AppTransaction must not win: once settle granted the
    /// account's token-bound purchase to its buyer, linking that account to someone else is
    /// refused (65, naming the conflict), and nothing is linked or assigned.
    func testLink_ofAnAccountTheLedgerShowsIsAnotherUsers_isRefused65_namingTheConflict() throws {
        try settle(expecting: 0, ["enqueue", "--order", "o-alice", "--user", buyer, "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000031", account: "7031", token: buyer)])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try state("o-alice"), "finished")
        let bob = "0c7f2e3f-4d5b-4c6e-9f70-8b9cad0e1f30"
        let refused = try settle(["link", "--user", bob, "--app-transaction-file", try appTransaction("7031")])
        XCTAssertEqual(refused.status, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("appTransactionId 7031 is the Apple Account of user \(buyer)"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("o-alice"), refused.stderr)
        XCTAssertEqual(try settle(expecting: 0, ["link", "--user", buyer, "--app-transaction-file", try appTransaction("7031")]).stdout,
                       "linked appTransactionId 7031 (Production) to user \(buyer)\n", "its own buyer may link it")
    }

    func testLink_aFamilyMembersSharedPurchase_isBoundToTheMember_neverToTheBuyerWhoseTokenItCarries() throws {
        let linked = try settle(expecting: 0, ["link", "--user", member, "--app-transaction-file", try appTransaction("7021")])
        XCTAssertEqual(linked.stdout, "linked appTransactionId 7021 (Production) to user \(member)\n")
        XCTAssertEqual(try settle(expecting: 0, ["link", "--user", member, "--app-transaction-file", try appTransaction("7021")]).stdout,
                       "appTransactionId 7021 is already linked to user \(member); nothing changed\n")
        try settle(expecting: 0, ["enqueue", "--order", "o-buyer", "--user", buyer, "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000021", account: "7021", familyShared: true,
                                                                            token: buyer)])
        try settle(expecting: 0, ["enqueue", "--order", "o-member", "--user", member, "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000022", account: "7021", familyShared: true,
                                                                            token: buyer)])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-buyer")["reason"], .string("user_mismatch"), "the buyer's token on a member's copy binds nothing")
        XCTAssertEqual(try state("o-member"), "finished")
        XCTAssertEqual(world.deliveries, ["2000000970000022 o-member"])
    }

    func testLink_refusesAnAppTransactionOfAnotherApp_oneFromXcode_andABareId_exit65_andHasHelp() throws {
        var result = try settle(expecting: 65, ["link", "--user", "u-7", "--app-transaction-file",
                                                try appTransaction("7031", bundleId: "com.example.other")])
        XCTAssertTrue(result.stderr.contains("bundle_mismatch"), result.stderr)
        result = try settle(expecting: 65, ["link", "--user", "u-7", "--app-transaction-file", try appTransaction("7032", receiptType: "Xcode")])
        XCTAssertTrue(result.stderr.contains("environment_mismatch"), result.stderr)
        result = try settle(expecting: 65, ["link", "--user", "u-7", "--app-transaction-file", try world.write("bare.txt", "7033")])
        XCTAssertTrue(result.stderr.contains("not a compact JWS"), result.stderr)
        try settle(expecting: 64, ["link", "--app-transaction-file", try appTransaction("7034")])
        XCTAssertTrue(try settle(expecting: 0, ["link", "--help"]).stdout.contains("Usage: settle link --user USER_ID"))
        XCTAssertTrue(try settle(expecting: 0, ["--help"]).stdout.contains("  link "))
        // Nothing was linked: a tokenless purchase of those accounts binds to nobody.
        try settle(expecting: 0, ["enqueue", "--order", "o-1", "--user", "u-7", "--product", world.coins,
                                  "--signed-transaction-file", try purchase("2000000970000031", account: "7031")])
        try settle(expecting: 0, ["reconcile"])
        XCTAssertEqual(try order("o-1")["reason"], .string("proof_unbound"))
    }
}
