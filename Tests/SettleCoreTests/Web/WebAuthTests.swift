import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleConfig

/// Who may look: loopback without users serves everyone as "local"; with users every request
/// needs basic auth; failed logins are limited per client address and logged without the password.
final class WebAuthTests: WebConsoleTestCase {
    /// Few iterations: the tests check the rule, PBKDF2's cost is OpenSSL's.
    func users(_ pairs: [(String, String)]) -> WebUsers {
        WebUsers(hashes: Dictionary(uniqueKeysWithValues: pairs.map { ($0.0, WebPasswordHash.make($0.1, iterations: 1000)) }))
    }

    func testLoopbackWithoutUsers_servesEveryRequest_asLocal() throws {
        let base = try start(try sqlite().ledger)
        let page = try get(base, "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(text(page).contains("<span class=\"who\" id=\"who\">local · read-only</span>"))
    }

    func testANonLoopbackListener_withoutUsers_refusesToStart_namingTheFix() throws {
        for listen in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
            XCTAssertThrowsError(try WebConsole(listen: listen, configuration: world.configuration(), ledger: try sqlite().ledger, users: nil,
                                                actions: false, time: world.time, log: .silent), listen) { error in
                XCTAssertTrue("\(error)".contains("set web.users_file"), "\(error)")
                XCTAssertTrue("\(error)".contains("settle web-passwd NAME"), "\(error)")
            }
        }
    }

    func testWithUsers_everyRequestNeedsBasicAuth_401WithoutOrWrong_200WithTheRightOnes() throws {
        let base = try start(try sqlite().ledger, users: users([("alice", "correct horse"), ("bob", "battery")]))
        for path in ["/", "/static/settle.css", "/api/status", "/search?q=x"] {
            let refused = try get(base, path)
            XCTAssertEqual(refused.status, 401, path)
            XCTAssertEqual(refused.header("WWW-Authenticate"), "Basic realm=\"settle\", charset=\"UTF-8\"", path)
            XCTAssertFalse(text(refused).contains("Overview"), path)
        }
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "battery")]).status, 401, "bob's password is not alice's")
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("carol", "battery")]).status, 401, "no such user")
        XCTAssertEqual(try get(base, "/", headers: [HTTPHeader("Authorization", "Basic !!!")]).status, 401)
        let signedIn = try get(base, "/", headers: [Self.basic("alice", "correct horse")])
        XCTAssertEqual(signedIn.status, 200)
        XCTAssertTrue(text(signedIn).contains("alice · read-only"))
        XCTAssertEqual(try get(base, "/api/status", headers: [Self.basic("bob", "battery")]).status, 200)
    }

    func testFailedLogins_areLimitedPerClientAddress_429WithRetryAfter_loggedWithoutThePassword() throws {
        let lines = LineCollector()
        let log = Log(environment: [:], time: world.time, sink: { lines.append($0) })
        let base = try start(try sqlite().ledger, users: users([("alice", "correct horse")]), log: log)
        for _ in 0..<5 {
            XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "Tr0ub4dor&3")]).status, 401)
        }
        let limited = try get(base, "/", headers: [Self.basic("alice", "correct horse")])
        XCTAssertEqual(limited.status, 429, "even the right password waits once the address is limited")
        XCTAssertEqual(limited.header("Retry-After"), "300")
        world.time.advance(by: 120)
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "correct horse")]).header("Retry-After"), "180")
        world.time.advance(by: 181)
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "correct horse")]).status, 200, "the window passed")
        let failures = lines.lines.filter { $0.contains("web.login_failed") }
        XCTAssertEqual(failures.count, 5)
        XCTAssertTrue(failures.allSatisfy { $0.contains("user=alice") && $0.contains("client=127.0.0.1") }, "\(failures)")
        XCTAssertFalse(lines.lines.joined().contains("Tr0ub4dor"), "the password is never logged")
        XCTAssertFalse(lines.lines.joined().contains("correct horse"))
    }

    func testPasswordHash_verifies_differsPerSalt_andReadsBackItsWrittenForm() throws {
        let one = WebPasswordHash.make("correct horse", iterations: 2000)
        let two = WebPasswordHash.make("correct horse", iterations: 2000)
        XCTAssertNotEqual(one.salt, two.salt)
        XCTAssertNotEqual(one.text, two.text)
        XCTAssertEqual(one.salt.count, 16)
        XCTAssertTrue(one.verifies("correct horse"))
        XCTAssertFalse(one.verifies("correct horse "))
        XCTAssertFalse(one.verifies(""))
        XCTAssertEqual(WebPasswordHash(one.text), one)
        XCTAssertTrue(one.text.hasPrefix("pbkdf2-sha256$2000$"))
        XCTAssertEqual(WebPasswordHash.make("x").iterations, 600_000)
        // RFC 7914 section 11's PBKDF2-HMAC-SHA256 vector: P="passwd", S="salt", c=1, dkLen=64.
        XCTAssertEqual(LowercaseHex.encode(PBKDF2.sha256(password: "passwd", salt: Array("salt".utf8), iterations: 1, length: 64)),
                       "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                       + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783")
        for bad in ["md5$1$c2FsdA==$aGFzaA==", "pbkdf2-sha256$0$c2FsdHNhbHQ=$aGFzaGhhc2hoYXNoaGFzaA==", "pbkdf2-sha256$10$!$!"] {
            XCTAssertNil(WebPasswordHash(bad), bad)
        }
    }

    func testUsersFile_namesTheLineThatIsWrong_neverItsText() throws {
        let good = WebPasswordHash.make("pw", iterations: 1000).text
        XCTAssertEqual(try WebUsers.parse("# console users\nalice:\(good)\n\nbob:\(good)\n", source: "web.users_file").names, ["alice", "bob"])
        XCTAssertThrowsError(try WebUsers.parse("alice:\(good)\nbob:hunter2\n", source: "web.users_file")) { error in
            let expected = "web.users_file: line 2 is not name:hash or name:hash:role as settle web-passwd NAME "
                + "prints it"
            XCTAssertEqual((error as? ConfigError)?.message, expected)
        }
        // Issue 36: an optional third field is the role; a two-field line keeps today's power, admin.
        let roled = try WebUsers.parse("alice:\(good)\nvic:\(good):viewer\nsam:\(good):support\n",
                                       source: "web.users_file")
        XCTAssertEqual(["alice", "vic", "sam"].map { roled.role(of: $0) }, [.admin, .viewer, .support])
        XCTAssertThrowsError(try WebUsers.parse("vic:\(good):root\n", source: "web.users_file")) { error in
            XCTAssertEqual((error as? ConfigError)?.message,
                           "web.users_file: line 1: a role is viewer, support or admin")
        }
        XCTAssertThrowsError(try WebUsers.parse("alice:\(good)\nalice:\(good)\n", source: "web.users_file"))
        XCTAssertThrowsError(try WebUsers.parse("# nobody\n", source: "web.users_file"))
    }

    // MARK: - Behind a proxy (issue 32: one throttle locked every support person out)

    func proxied(_ users: WebUsers) throws -> String {
        var configuration = try world.configuration()
        configuration.web.trustedProxies = [try XCTUnwrap(AddressRange("127.0.0.0/8"))]
        return try start(try sqlite().ledger, users: users, configuration: configuration)
    }

    func from(_ client: String) -> HTTPHeader { HTTPHeader("X-Forwarded-For", "\(client), 127.0.0.9") }

    func testBehindATrustedProxy_failuresCountPerForwardedClient_neverForEveryoneBehindIt() throws {
        let base = try proxied(users([("alice", "correct horse"), ("bob", "battery")]))
        for _ in 0..<5 {
            XCTAssertEqual(try get(base, "/", headers: [from("203.0.113.66"), Self.basic("alice", "wrong")]).status, 401)
        }
        XCTAssertEqual(try get(base, "/", headers: [from("203.0.113.66"), Self.basic("bob", "battery")]).status, 429,
                       "the guesser's own address waits")
        XCTAssertEqual(try get(base, "/", headers: [from("203.0.113.7"), Self.basic("bob", "battery")]).status, 200,
                       "another support person behind the same proxy signs in")
        XCTAssertEqual(try get(base, "/", headers: [from("203.0.113.8"), Self.basic("alice", "correct horse")]).status, 200,
                       "so does alice, whose name was guessed")
    }

    func testAnUntrustedPeersForwardedFor_isIgnored() throws {
        let base = try start(try sqlite().ledger, users: users([("alice", "correct horse")]))
        for i in 0..<5 {
            XCTAssertEqual(try get(base, "/", headers: [from("198.51.100.\(i)"), Self.basic("alice", "wrong")]).status, 401)
        }
        XCTAssertEqual(try get(base, "/", headers: [from("198.51.100.99"), Self.basic("alice", "wrong")]).status, 429,
                       "a forged X-Forwarded-For does not make a new client")
    }

    func testAUserGuessedFromManyAddresses_waitsForThoseWhoFailed_neverForACorrectPasswordFromAnotherClient() throws {
        let base = try proxied(users([("alice", "correct horse")]))
        for i in 0..<20 {
            XCTAssertEqual(try get(base, "/", headers: [from("198.51.100.\(i)"), Self.basic("alice", "guess-\(i)")]).status, 401)
        }
        XCTAssertEqual(try get(base, "/", headers: [from("198.51.100.3"), Self.basic("alice", "guess-x")]).status, 429,
                       "an address that failed already waits once the user's name is under attack")
        XCTAssertEqual(try get(base, "/", headers: [from("198.51.100.3"), Self.basic("alice", "correct horse")]).status, 429)
        XCTAssertEqual(try get(base, "/", headers: [from("203.0.113.20"), Self.basic("alice", "correct horse")]).status, 200,
                       "alice herself, from a client with no failures, is heard")
        XCTAssertEqual(try get(base, "/", headers: [from("198.51.100.3"), Self.basic("alice", "correct horse")]).status, 200,
                       "and once her password was checked right, her header is known everywhere")
    }

    func testPasswordChecks_whenEverySlotIsBusy_answer503_whileASignedInUserIsServed() throws {
        let users = WebUsers(hashes: ["alice": WebPasswordHash.make("correct horse", iterations: 1000)], concurrentChecks: 1)
        let base = try start(try sqlite().ledger, users: users)
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "correct horse")]).status, 200)
        users.checks.wait()   // a check in progress holds the one slot
        let busy = try get(base, "/", headers: [Self.basic("alice", "anything else")])
        XCTAssertEqual(busy.status, 503)
        XCTAssertEqual(busy.header("Retry-After"), "1")
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "correct horse")]).status, 200, "the signed-in header needs no check")
        users.checks.signal()
        XCTAssertEqual(try get(base, "/", headers: [Self.basic("alice", "anything else")]).status, 401)
    }

    func testClientAddress_andThePerClientLimit() throws {
        let trusted = ClientAddress(trusted: [try XCTUnwrap(AddressRange("10.0.0.0/8")), try XCTUnwrap(AddressRange("::1"))])
        let proxy = ListenAddress("10.1.2.3:0"), other = ListenAddress("192.0.2.5:0")
        func request(_ peer: ListenAddress?, _ xff: [String]) -> HTTPServerRequest {
            HTTPServerRequest(method: "GET", path: "/", headers: xff.map { HTTPHeader("X-Forwarded-For", $0) }, client: peer)
        }
        XCTAssertEqual(trusted.of(request(proxy, ["203.0.113.9, 10.0.0.7"])), "203.0.113.9", "the right-most untrusted hop")
        XCTAssertEqual(trusted.of(request(proxy, ["6.6.6.6, 203.0.113.9"])), "203.0.113.9", "a client's own forged hops are left of it")
        XCTAssertEqual(trusted.of(request(proxy, ["6.6.6.6", "203.0.113.9"])), "203.0.113.9", "several headers are one list")
        XCTAssertEqual(trusted.of(request(proxy, [])), "10.1.2.3", "nothing forwarded: the proxy itself")
        XCTAssertEqual(trusted.of(request(proxy, ["not-an-address"])), "unreadable-forwarded-address")
        XCTAssertEqual(trusted.of(request(other, ["203.0.113.9"])), "192.0.2.5", "an untrusted peer's header is ignored")
        XCTAssertNil(AddressRange("10.0.0.0/33"))
        XCTAssertNil(AddressRange("example.com"))
        XCTAssertTrue(try XCTUnwrap(AddressRange("127.0.0.1")).contains(try XCTUnwrap(AddressRange.parse("::ffff:127.0.0.1"))))
        let limit = PerClientLimit(limit: 2)
        XCTAssertTrue(limit.enter("a"))
        XCTAssertTrue(limit.enter("a"))
        XCTAssertFalse(limit.enter("a"), "a third at once")
        XCTAssertTrue(limit.enter("b"), "another client is not held by the first")
        limit.leave("a")
        XCTAssertTrue(limit.enter("a"))
        _ = try world.writeConfig(overrides: [("web", .object([("trusted_proxies", .array([.string("127.0.0.1"), .string("bad/8")]))]))])
        XCTAssertThrowsError(try world.configuration()) { XCTAssertTrue("\($0)".contains("web.trusted_proxies: \"bad/8\""), "\($0)") }
    }
}
