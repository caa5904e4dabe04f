import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleConfig
@testable import SettleLedger
import SettleAppStoreSimulator

/// DNS rebinding: a page on another site whose name re-resolves to the console's address is
/// same-origin with it in the browser, but its requests carry its own name in `Host`. The
/// console answers only its bound address, localhost and `web.hosts`, before anything is read.
/// And a forged CSRF token's time is a refusal, never an overflow.
final class WebHostTests: WebConsoleTestCase {
    func testARequestForAnotherName_isRefused421_beforeAnythingIsReadOrWritten() throws {
        let engine = try sqlite()
        try enqueue(engine.ledger, "o-1", user: "u-alice")
        try engine.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id = 'o-1'")
        let base = try start(engine.ledger, actions: true)
        let port = try XCTUnwrap(consoles.last?.port)
        let token = try csrfToken(base, order: "o-1")
        let history = try engine.ledger.orderRecord("o-1")?.history.count
        for host in ["attacker.example:\(port)", "attacker.example", "LOCALHOST.attacker.example:\(port)", "127.0.0.1.nip.io:\(port)",
                     "127.0.0.1:\(port == 1 ? 2 : 1)", "localhost:\(port == 1 ? 2 : 1)", "localhost", "[::1]:\(port)", "a b:\(port)"] {
            let page = try get(base, "/orders/o-1", headers: [HTTPHeader("Host", host)])
            XCTAssertEqual(page.status, 421, host)
            XCTAssertFalse(text(page).contains("u-alice"), host)
            XCTAssertEqual(try get(base, "/api/orders/o-1", headers: [HTTPHeader("Host", host)]).status, 421, host)
            let posted = try post(base, "/orders/o-1/retry", [("csrf", token), ("note", "n")],
                                  headers: [HTTPHeader("Host", host), HTTPHeader("Sec-Fetch-Site", "same-origin")])
            XCTAssertEqual(posted.status, 421, host)
        }
        XCTAssertEqual(try get(base, "/", headers: [HTTPHeader("Host", "")]).status, 421, "no Host at all")
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.history.count, history, "nothing was written")
        XCTAssertEqual(try engine.ledger.orderRecord("o-1")?.order.state, .needsAttention)
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LocalHost:\(port)"] {
            XCTAssertEqual(try get(base, "/orders/o-1", headers: [HTTPHeader("Host", host)]).status, 200, host)
        }
    }

    func testNamesInWebHosts_areAnswered_withTheirPortWhenOneIsGiven() throws {
        var configuration = try world.configuration()
        configuration.web.hosts = ["Settle.Example.com", "console.internal:8443"]
        let base = try start(try sqlite().ledger, configuration: configuration)
        for (host, status) in [("settle.example.com", 200), ("settle.example.com:443", 200), ("SETTLE.EXAMPLE.COM", 200),
                               ("console.internal:8443", 200), ("console.internal", 421), ("console.internal:80", 421),
                               ("example.com", 421), ("other.settle.example.com", 421)] {
            XCTAssertEqual(try get(base, "/", headers: [HTTPHeader("Host", host)]).status, status, host)
        }
    }

    func testWebHosts_isReadFromTheConfiguration_andABadEntryIsNamed() throws {
        _ = try world.writeConfig(overrides: [("web", .object([("hosts", .array([.string("settle.example.com"), .string("a:8443")]))]))])
        XCTAssertEqual(try world.configuration().web.hosts, ["settle.example.com", "a:8443"])
        for bad: JSONValue in [.string("x"), .array([.string("https://x/")]), .array([.number("1")]), .array([.string("")])] {
            _ = try world.writeConfig(overrides: [("web", .object([("hosts", bad)]))])
            XCTAssertThrowsError(try world.configuration()) { XCTAssertTrue("\($0)".contains("web.hosts"), "\($0)") }
        }
    }

    func testAForgedCSRFTime_isRefused_andTheConsoleKeepsAnswering() throws {
        let engine = try sqlite()
        try enqueue(engine.ledger, "o-1")
        try engine.execute("UPDATE orders SET state = 'needs_attention', reason = 'attempts_exhausted' WHERE order_id = 'o-1'")
        let base = try start(engine.ledger, actions: true)
        for forged in ["-9223372036854775808.x", "9223372036854775807.x", "-1.x", "-0.x", "99999999999999999999.x", ".x", "1e9.x"] {
            XCTAssertEqual(try post(base, "/orders/o-1/retry", [("csrf", forged)]).status, 403, forged)
        }
        let csrf = CSRFToken(time: world.time)
        XCTAssertFalse(csrf.isValid("-9223372036854775808.\(String(repeating: "0", count: 64))", for: "local"))
        XCTAssertTrue(csrf.isValid(csrf.token(for: "local"), for: "local"))
        XCTAssertEqual(try get(base, "/").status, 200, "still answering")
    }

    /// A loopback console with no users file behind a same-host proxy would be open to everyone
    /// who reaches the proxy: a request a proxy forwarded is refused until there is a users file.
    func testAProxiedRequest_isRefused_withoutAUsersFile_andServedWithOne() throws {
        let engine = try sqlite()
        try enqueue(engine.ledger, "o-1")
        let open = try start(engine.ledger)
        for header in [HTTPHeader("X-Forwarded-For", "203.0.113.9"), HTTPHeader("Forwarded", "for=203.0.113.9"),
                       HTTPHeader("X-Real-IP", "203.0.113.9"), HTTPHeader("x-forwarded-for", "203.0.113.9")] {
            let refused = try get(open, "/orders/o-1", headers: [header])
            XCTAssertEqual(refused.status, 403, header.name)
            XCTAssertTrue(text(refused).contains("set web.users_file"), header.name)
            XCTAssertFalse(text(refused).contains("u-1"), header.name)
        }
        XCTAssertEqual(try get(open, "/orders/o-1").status, 200, "this machine's own browser")
        let users = WebUsers(hashes: ["alice": WebPasswordHash.make("pw", iterations: 1000)])
        let guarded = try start(engine.ledger, users: users)
        XCTAssertEqual(try get(guarded, "/", headers: [HTTPHeader("X-Forwarded-For", "203.0.113.9"), Self.basic("alice", "pw")]).status, 200)
        XCTAssertEqual(try get(guarded, "/", headers: [HTTPHeader("X-Forwarded-For", "203.0.113.9")]).status, 401)
    }
}

/// Store lookups from the console (issue 32): a GET never asks a store (any page can make a
/// browser send one); an explicit POST with the console's CSRF token does, through one client
/// per store for the process, at most ten a minute for an operator.
final class WebLookupTests: WebConsoleTestCase {
    func testAStoreOrderId_isLookedUpOnlyByAPostFromTheConsole_limitedPerOperator() throws {
        _ = try world.writeConfig(serverAPI: true)
        let bought = SimulatedSignedTransaction(transactionId: "2000000000000601", productId: world.coins, bundleId: world.bundleId,
                                                purchaseDateMs: 1_764_410_645_000)
        world.simulator.script(appleOrder: "MQ5Q8W3X2Z", [bought])
        let engine = try sqlite()
        try enqueue(engine.ledger, "o-601", transaction: "2000000000000601")
        let base = try start(engine.ledger)
        let lookups = { self.world.simulator.arrivals.filter { $0.contains("/inApps/v1/lookup/") }.count }
        for _ in 0..<40 {   // what 40 cross-site image GETs send
            let page = try get(base, "/search?q=MQ5Q8W3X2Z", headers: [HTTPHeader("Sec-Fetch-Site", "cross-site")])
            XCTAssertEqual(page.status, 200)
            XCTAssertFalse(text(page).contains("id=\"apple-order\""))
        }
        XCTAssertEqual(lookups(), 0, "no GET asked Apple")
        let offer = text(try get(base, "/search?q=MQ5Q8W3X2Z"))
        XCTAssertTrue(offer.contains("id=\"lookup-form\""), offer)
        XCTAssertEqual(try post(base, "/search", [("lookup", "MQ5Q8W3X2Z")]).status, 403, "no token")
        let token = try XCTUnwrap(offer.range(of: "name=\"csrf\" value=\"").map { offer[$0.upperBound...].prefix { $0 != "\"" } })
        XCTAssertEqual(try post(base, "/search", [("csrf", String(token)), ("lookup", "MQ5Q8W3X2Z")],
                                headers: [HTTPHeader("Sec-Fetch-Site", "cross-site")]).status, 403, "another site's form")
        XCTAssertEqual(lookups(), 0)
        let asked = try post(base, "/search", [("csrf", String(token)), ("lookup", "MQ5Q8W3X2Z")])
        XCTAssertEqual(asked.status, 200)
        XCTAssertTrue(text(asked).contains("id=\"apple-order\""), text(asked))
        XCTAssertTrue(text(asked).contains("o-601"))
        XCTAssertEqual(lookups(), 1)
        for _ in 0..<9 { _ = try post(base, "/search", [("csrf", String(token)), ("lookup", "MQ5Q8W3X2Z")]) }
        let limited = try post(base, "/search", [("csrf", String(token)), ("lookup", "MQ5Q8W3X2Z")])
        XCTAssertEqual(limited.status, 429, "at most ten a minute")
        XCTAssertEqual(lookups(), 10)
        world.time.advance(by: 61)
        XCTAssertEqual(try post(base, "/search", [("csrf", String(token)), ("lookup", "MQ5Q8W3X2Z")]).status, 200)
    }
}
