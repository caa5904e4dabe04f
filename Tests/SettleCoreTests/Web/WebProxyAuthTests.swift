import Foundation
import SettleTesting
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleConfig
@testable import SettleModel
@testable import SettleLedger

/// `web.auth: proxy` and roles (issue 36), over real HTTP on both engines: the user a proxy
/// names is believed only from `web.trusted_proxies`, only as one valid name; a role too low
/// is refused (403, audited as refused) even with a valid CSRF token; and basic auth never
/// believes a proxy header.
final class WebProxyAuthTests: WebConsoleTestCase {
    static let header = "X-Forwarded-User"

    func proxyConfiguration(trusted: [String] = ["127.0.0.1"],
                            roles: [String: OperatorRole] = ["sam": .support, "ann": .admin],
                            defaultRole: OperatorRole = .viewer) throws -> Configuration {
        var configuration = try world.configuration()
        configuration.web.auth = .proxy
        configuration.web.proxyUserHeader = Self.header
        configuration.web.trustedProxies = try trusted.map { try XCTUnwrap(AddressRange($0)) }
        configuration.web.roles = roles
        configuration.web.defaultRole = defaultRole
        return configuration
    }

    func asUser(_ name: String, client: String = "203.0.113.9") -> [HTTPHeader] {
        [HTTPHeader(Self.header, name), HTTPHeader("X-Forwarded-For", client)]
    }

    func needsAttention(_ engine: Engine, _ id: String) throws {
        try enqueue(engine.ledger, id, transaction: "t-\(id)")
        try engine.execute("""
            UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id = '\(id)'
            """)
    }

    func testTheHeaderFromAPeerNotInTrustedProxies_isRefused_andNeverBelieved() throws {
        let engine = try sqlite()
        try needsAttention(engine, "o-1")
        let lines = Mutex<[String]>([])
        let log = Log(environment: [:], time: world.time, sink: { line in lines.withLock { $0.append(line) } })
        // The console's peer in these tests is 127.0.0.1: trusting only 10.0.0.0/8 makes it a stranger.
        let stranger = try proxyConfiguration(trusted: ["10.0.0.0/8"])
        let base = try start(engine.ledger, actions: true, log: log, configuration: stranger)
        let page = try get(base, "/", headers: asUser("ann"))
        XCTAssertEqual(page.status, 403)
        XCTAssertTrue(text(page).contains("web.trusted_proxies"), "names the fix: \(text(page))")
        let post = try post(base, "/orders/o-1/retry", [("csrf", "x"), ("note", "n")], headers: asUser("ann"))
        XCTAssertEqual(post.status, 403)
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention)
        XCTAssertEqual(try engine.ledger.auditEntries(), [], "no sign-in from a spoofed header")
        XCTAssertTrue(lines.withLock { $0 }.contains { $0.contains("web.proxy_identity_refused") }, "logged")
    }

    func testFromTheTrustedProxy_aMissingEmptyRepeatedOrMalformedHeader_isRefused() throws {
        let engine = try sqlite()
        let base = try start(engine.ledger, actions: true, configuration: try proxyConfiguration())
        let missing = try get(base, "/", headers: [HTTPHeader("X-Forwarded-For", "203.0.113.9")])
        XCTAssertEqual(missing.status, 401)
        XCTAssertTrue(text(missing).contains("no X-Forwarded-User header"), text(missing))
        for bad in ["a b", "<script>", String(repeating: "a", count: 65), "alice\u{7}", "ann,sam"] {
            let response = try get(base, "/", headers: asUser(bad))
            XCTAssertEqual(response.status, 401, bad)
            XCTAssertFalse(text(response).contains(bad), "the header's value is never echoed: \(bad)")
        }
        for blank in ["", " "] {
            XCTAssertEqual(try get(base, "/", headers: asUser(blank)).status, 401, "an empty or blank header is nobody")
        }
        let twice = try get(base, "/", headers: asUser("ann") + [HTTPHeader(Self.header, "sam")])
        XCTAssertEqual(twice.status, 401, "two names: neither is believed")
        XCTAssertEqual(try get(base, "/", headers: asUser("ann") + [WebConsoleTestCase.basic("ann", "x")]).status, 200,
                       "proxy auth ignores Authorization")
        XCTAssertEqual(try engine.ledger.auditEntries().map(\.action), ["sign_in"],
                       "one sign-in, for ann's first request")
    }

    func testAViewer_postingRetryWithAValidToken_gets403_namingTheRole_andARefusedAuditRow_onBothEngines() throws {
        try onEachEngine { engine in
            try needsAttention(engine, "o-1")
            let base = try start(engine.ledger, actions: true, configuration: try proxyConfiguration())
            let page = text(try get(base, "/orders/o-1", headers: asUser("vic")))
            XCTAssertFalse(page.contains("id=\"retry-form\""), "the viewer sees no Retry button (\(engine.name))")
            XCTAssertTrue(page.contains("yours is viewer"), engine.name)
            // A crafted POST: the token is the viewer's own and valid.
            let token = CSRFTokenPeek.token(console: consoles.last!, for: "vic")
            let refused = try post(base, "/orders/o-1/retry", [("csrf", token), ("note", "sneaky")],
                                   headers: asUser("vic"))
            XCTAssertEqual(refused.status, 403, engine.name)
            XCTAssertTrue(text(refused).contains("needs the role support"), text(refused))
            XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention, engine.name)
            let entry = try XCTUnwrap(try engine.ledger.auditEntries().first, engine.name)
            let role = entry.role?.rawValue ?? "-"
            let said = "\(entry.actor) \(entry.action) \(entry.subject) \(entry.outcome) \(role) \(entry.source)"
            XCTAssertEqual(said, "vic retry o-1 refused viewer 203.0.113.9", engine.name)
        }
    }

    func testSupportRetries_withTheAuditRowNamingThem_butMayNotTransfer_andAdminMay_onBothEngines() throws {
        try onEachEngine { engine in
            try needsAttention(engine, "o-1")
            let base = try start(engine.ledger, actions: true, configuration: try proxyConfiguration())
            let sam = asUser("sam", client: "198.51.100.20")
            let token = try csrfToken(base, order: "o-1", headers: sam)
            let retried = try post(base, "/orders/o-1/retry", [("csrf", token), ("note", "ticket 5")], headers: sam)
            XCTAssertEqual(retried.status, 303, engine.name)
            XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.history.last?.detail, "by sam via web: ticket 5",
                           engine.name)
            let entry = try XCTUnwrap(try engine.ledger.auditEntries().first, engine.name)
            let said = "\(entry.actor) \(entry.channel) \(entry.role?.rawValue ?? "-") \(entry.source) \(entry.action) "
                + entry.outcome.rawValue
            XCTAssertEqual(said, "sam web support 198.51.100.20 retry ok", engine.name)

            let console = try XCTUnwrap(consoles.last)
            let transfer = try post(base, "/orders/o-1/transfer",
                                    [("csrf", CSRFTokenPeek.token(console: console, for: "sam")), ("to_user", "u-2"),
                                     ("note", "n")], headers: sam)
            XCTAssertEqual(transfer.status, 403, engine.name)
            XCTAssertTrue(text(transfer).contains("needs the role admin"), engine.name)
            let ann = asUser("ann")
            let byAdmin = try post(base, "/orders/o-1/transfer",
                                   [("csrf", CSRFTokenPeek.token(console: console, for: "ann")), ("to_user", "u-2"),
                                    ("note", "n")], headers: ann)
            XCTAssertEqual(byAdmin.status, 409, "admin passes the role check; the ledger refuses a pending order")
        }
    }

    func testBasicAuth_neverBelievesAProxyHeader_evenFromATrustedProxy() throws {
        let engine = try sqlite()
        try needsAttention(engine, "o-1")
        var configuration = try world.configuration()
        configuration.web.trustedProxies = [try XCTUnwrap(AddressRange("127.0.0.1"))]
        let users = WebUsers(hashes: ["alice": WebPasswordHash.make("pw", iterations: 1000)],
                             roles: ["alice": .support])
        let base = try start(engine.ledger, actions: true, users: users, configuration: configuration)
        let alice = [WebConsoleTestCase.basic("alice", "pw"), HTTPHeader(Self.header, "root")]
        XCTAssertEqual(try get(base, "/", headers: [HTTPHeader(Self.header, "root")]).status, 401,
                       "the header alone is nobody")
        let retried = try post(base, "/orders/o-1/retry", [("csrf", try csrfToken(base, order: "o-1", headers: alice)),
                                                         ("note", "t")], headers: alice)
        XCTAssertEqual(retried.status, 303)
        XCTAssertEqual(try engine.ledger.auditEntries().first?.actor, "alice")
        XCTAssertEqual(try engine.ledger.auditEntries().first?.role, .support)
    }

    func testAWrongPassword_isAuditedAsARefusedSignIn_withoutThePassword() throws {
        let engine = try sqlite()
        let users = WebUsers(hashes: ["alice": WebPasswordHash.make("pw", iterations: 1000)])
        let base = try start(engine.ledger, actions: true, users: users)
        XCTAssertEqual(try get(base, "/", headers: [WebConsoleTestCase.basic("alice", "hunter2-secret")]).status, 401)
        XCTAssertEqual(try get(base, "/", headers: [WebConsoleTestCase.basic("my-password-9", "x")]).status, 401)
        XCTAssertEqual(try get(base, "/", headers: [WebConsoleTestCase.basic("alice", "pw")]).status, 200)
        XCTAssertEqual(try get(base, "/", headers: [WebConsoleTestCase.basic("alice", "pw")]).status, 200)
        let entries = try engine.ledger.auditEntries()
        XCTAssertEqual(entries.map { "\($0.action) \($0.actor) \($0.outcome)" },
                       ["sign_in alice ok", "sign_in unknown refused", "sign_in alice refused"])
        let leaked = entries.filter { entry in
            ["hunter2", "Basic ", "my-password"].contains { "\(entry)".contains($0) }
        }
        XCTAssertEqual(leaked, [], "no password, no header")
    }

    func testCheckConfig_refusesProxyAuth_withoutItsHeader_orTrustedProxies_namingTheKey() throws {
        func refusal(_ web: [(String, JSONValue)]) throws -> String {
            _ = try world.writeConfig(overrides: [("web", .object(web))])
            do {
                _ = try world.configuration()
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        let header: (String, JSONValue) = ("proxy_user_header", .string("X-Forwarded-User"))
        let trusted: (String, JSONValue) = ("trusted_proxies", .array([.string("127.0.0.1")]))
        XCTAssertTrue(try refusal([("auth", .string("proxy")), trusted]).contains("web.proxy_user_header: required"))
        XCTAssertTrue(try refusal([("auth", .string("proxy")), header]).contains("web.trusted_proxies: required"))
        let authorization: (String, JSONValue) = ("proxy_user_header", .string("Authorization"))
        XCTAssertTrue(try refusal([("auth", .string("proxy")), authorization, trusted])
            .contains("web.proxy_user_header"))
        XCTAssertTrue(try refusal([("auth", .string("oauth"))]).contains("web.auth: \"oauth\" is not basic or proxy"))
        let annAdmin: (String, JSONValue) = ("roles", .object([("ann", .string("admin"))]))
        XCTAssertTrue(try refusal([("roles", .object([("ann", .string("root"))]))])
            .contains("web.roles.ann: a role is"))
        XCTAssertTrue(try refusal([annAdmin]).contains("web.roles: applies to web.auth proxy"))
        XCTAssertTrue(try refusal([header, trusted]).contains("web.proxy_user_header: applies to web.auth proxy only"))
        XCTAssertEqual(try refusal([("auth", .string("proxy")), header, trusted, annAdmin,
                                    ("default_role", .string("support"))]), "accepted")
        XCTAssertEqual(try world.configuration().web.roles["ann"], .admin)
        XCTAssertEqual(try world.configuration().web.defaultRole, .support)
        // A non-loopback listener with proxy auth is allowed (no users file needed), TLS in front still said.
        var web = try world.configuration().web
        web.tlsInFront = true
        XCTAssertNil(WebConsole.refusal(listen: "10.0.0.5:8480", address: try XCTUnwrap(ListenAddress("10.0.0.5:8480")),
                                        hasUsers: web.auth == .proxy, web: web))
    }
}

/// The CSRF token a console would put on its own form for `operatorName`, as a person who can
/// read the page they are allowed to read holds it.
enum CSRFTokenPeek {
    static func token(console: WebConsole, for operatorName: String) -> String { console.csrf.token(for: operatorName) }
}
