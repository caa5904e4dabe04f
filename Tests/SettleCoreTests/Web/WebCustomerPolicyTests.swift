import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// The refund policy card and form of a customer's page (issue 37), over loopback HTTP on both
/// engines: support records consent and preference with a note, audited as `customer_set`; a
/// viewer sees no form and its POST is 403 and audited; a form without the person's CSRF token,
/// or from another site, is refused before anything is written; values outside the form's
/// choices are refused; `/api/users/U` carries the policy as `refund_policy`.
final class WebCustomerPolicyTests: WebConsoleTestCase {
    let sam = [WebConsoleTestCase.basic("sam", "pw")], vic = [WebConsoleTestCase.basic("vic", "pw2")]

    func users() -> WebUsers {
        WebUsers(hashes: ["sam": WebPasswordHash.make("pw", iterations: 1000),
                          "vic": WebPasswordHash.make("pw2", iterations: 1000)],
                 roles: ["sam": .support, "vic": .viewer])
    }

    /// The CSRF token of the customer page's form.
    func policyToken(_ base: String, user: String, headers: [HTTPHeader]) throws -> String {
        let page = text(try get(base, "/users/\(user)", headers: headers))
        guard let start = page.range(of: "name=\"csrf\" value=\""), let end = page[start.upperBound...].firstIndex(of: "\"") else {
            XCTFail("no CSRF token on the page of \(user)")
            return ""
        }
        return String(page[start.upperBound..<end])
    }

    func testSupportRecordsThePolicy_audited_andAViewerIsRefusedAndAudited_onBothEngines() throws {
        try onEachEngine { engine in
            try enqueue(engine.ledger, "o-1", user: "u-7")
            let base = try start(engine.ledger, actions: true, users: users())
            let before = text(try get(base, "/users/u-7", headers: sam))
            XCTAssertTrue(before.contains("id=\"refund-policy\""), engine.name)
            XCTAssertTrue(before.contains("unknown (no record)"), engine.name)
            XCTAssertTrue(before.contains("id=\"policy-form\""), engine.name)
            XCTAssertFalse(text(try get(base, "/users/u-7", headers: vic)).contains("policy-form"), "\(engine.name): a viewer sees no form")

            let vicToken = try XCTUnwrap(consoles.last).csrf.token(for: "vic")
            let refused = try post(base, "/users/u-7/policy", [("csrf", vicToken), ("consented", "yes"), ("note", "n")], headers: vic)
            XCTAssertEqual(refused.status, 403, engine.name)
            XCTAssertNil(try engine.ledger.customerPolicy(userId: "u-7"), engine.name)
            XCTAssertEqual(try engine.ledger.auditEntries(actor: "vic").filter { $0.action == "customer_set" }.map(\.outcome),
                           [.refused], engine.name)

            let token = try policyToken(base, user: "u-7", headers: sam)
            let done = try post(base, "/users/u-7/policy", [("csrf", token), ("consented", "no"), ("refund_preference", "decline"),
                                                            ("note", "ticket 12 <script>")], headers: sam)
            XCTAssertEqual(done.status, 303, "\(engine.name): \(text(done))")
            let policy = try XCTUnwrap(engine.ledger.customerPolicy(userId: "u-7"), engine.name)
            XCTAssertEqual(policy.consented, false, engine.name)
            XCTAssertEqual(policy.refundPreference, .decline, engine.name)
            XCTAssertEqual(policy.setBy, .console, engine.name)
            XCTAssertEqual(policy.setByName, "sam", engine.name)
            let audit = try XCTUnwrap(engine.ledger.auditEntries(actor: "sam").first, engine.name)
            XCTAssertEqual(audit.action, "customer_set", engine.name)
            XCTAssertEqual(audit.subject, "u-7", engine.name)
            XCTAssertEqual(audit.role, .support, engine.name)
            XCTAssertTrue(audit.detail.contains("consented no") && audit.detail.contains("ticket 12"), engine.name)

            let after = text(try get(base, "/users/u-7?done=policy", headers: sam))
            XCTAssertTrue(after.contains("refund policy recorded"), engine.name)
            XCTAssertTrue(after.contains("refused (console sam"), engine.name)
            XCTAssertFalse(after.contains("<script>"), "\(engine.name): the note is escaped")
            let api = try JSONValue.parse(try get(base, "/api/users/u-7", headers: vic).body)
            XCTAssertEqual(api["refund_policy"]?["consented"], .bool(false), engine.name)
            XCTAssertEqual(api["refund_policy"]?["refund_preference"], .string("decline"), engine.name)
        }
    }

    func testForgedCrossSiteOrOutOfChoiceForms_areRefused_andWriteNothing() throws {
        try onEachEngine { engine in
            try enqueue(engine.ledger, "o-1", user: "u-8")
            let base = try start(engine.ledger, actions: true, users: users())
            let token = try policyToken(base, user: "u-8", headers: sam)
            let forged = try post(base, "/users/u-8/policy", [("consented", "yes"), ("note", "n")], headers: sam)
            XCTAssertEqual(forged.status, 403, "no CSRF token: \(engine.name)")
            let crossSite = try post(base, "/users/u-8/policy", [("csrf", token), ("consented", "yes"), ("note", "n")],
                                     headers: sam + [HTTPHeader("Sec-Fetch-Site", "cross-site")])
            XCTAssertEqual(crossSite.status, 403, "a form from another site: \(engine.name)")
            for form in [[("consented", "maybe"), ("note", "n")], [("refund_preference", "GRANT_FULL"), ("note", "n")],
                         [("consented", "yes")], [("note", "nothing chosen")],
                         [("consented", "yes"), ("note", String(repeating: "n", count: 1001))]] {
                let response = try post(base, "/users/u-8/policy", [("csrf", token)] + form, headers: sam)
                XCTAssertEqual(response.status, 409, "\(engine.name): \(form.map(\.0))")
            }
            XCTAssertNil(try engine.ledger.customerPolicy(userId: "u-8"), engine.name)
            let readOnly = try start(engine.ledger, actions: false, users: users())
            XCTAssertEqual(try post(readOnly, "/users/u-8/policy", [("csrf", token), ("consented", "yes"), ("note", "n")],
                                    headers: sam).status, 403, "a read-only console writes nothing: \(engine.name)")
            XCTAssertFalse(text(try get(readOnly, "/users/u-8", headers: sam)).contains("policy-form"), engine.name)
        }
    }
}
