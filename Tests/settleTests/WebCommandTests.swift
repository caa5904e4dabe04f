import Foundation
import SettleBase
import SettleLedger
import XCTest
@testable import SettleApp

/// `settle web` and `settle web-passwd` through the binary: who may listen where (exit 78),
/// the read-only default, the users file, and the password hashes.
final class WebCommandTests: WebEndToEndTestCase {
    func webConfig(_ web: [(String, JSONValue)]) throws {
        try world.writeConfig(overrides: [("web", .object(web))])
    }

    func testANonLoopbackListener_withoutAUsersFile_refusesToStart_exit78_namingTheFix() throws {
        for listen in ["0.0.0.0:8480", "[::]:8480", "192.0.2.10:8480"] {
            let result = try settle(["web", "--listen", listen])
            XCTAssertEqual(result.status, 78, listen)
            XCTAssertTrue(result.stderr.contains("is not a loopback address"), result.stderr)
            XCTAssertTrue(result.stderr.contains("set web.users_file (lines name:hash from settle web-passwd NAME)"), result.stderr)
        }
        try webConfig([("listen", .string("0.0.0.0:8480"))])
        XCTAssertEqual(try settle(["web"]).status, 78, "the configured listener too")
        XCTAssertEqual(try settle(["web", "--listen", "localhost:80"]).status, 64, "a numeric host is needed")
        try webConfig([("listen", .string("example.com:80"))])
        let bad = try settle(["check-config"])
        XCTAssertEqual(bad.status, 78)
        XCTAssertTrue(bad.stderr.contains("web.listen: \"example.com:80\" is not HOST:PORT"), bad.stderr)
        try webConfig([("listen", .string("127.0.0.1:8480")), ("actions", .string("yes"))])
        XCTAssertEqual(try settle(["check-config"]).status, 78)
        try webConfig([("lisen", .string("127.0.0.1:8480"))])
        XCTAssertTrue(try settle(["check-config"]).stderr.contains("web.lisen"))
    }

    func testWebPasswd_printsALineWhoseHashVerifies_andDiffersEachTime() throws {
        let one = try settle(["web-passwd", "alice"], stdin: Data("correct horse\n".utf8))
        let two = try settle(["web-passwd", "alice"], stdin: Data("correct horse\n".utf8))
        XCTAssertEqual(one.status, 0, one.stderr)
        XCTAssertTrue(one.stdout.hasPrefix("alice:pbkdf2-sha256$600000$"), one.stdout)
        XCTAssertNotEqual(one.stdout, two.stdout, "a fresh salt each time")
        XCTAssertFalse(one.stdout.contains("correct horse"))
        let users = try WebUsers.parse(one.stdout + two.stdout.replacingOccurrences(of: "alice:", with: "bob:"), source: "test")
        XCTAssertEqual(users.check(authorization: "Basic " + Data("alice:correct horse".utf8).base64EncodedString()), .user("alice"))
        XCTAssertEqual(users.check(authorization: "Basic " + Data("bob:correct horse".utf8).base64EncodedString()), .user("bob"))
        XCTAssertEqual(users.check(authorization: "Basic " + Data("alice:wrong".utf8).base64EncodedString()), .refused("alice"))
        XCTAssertEqual(try settle(["web-passwd", "alice"], stdin: Data()).status, 65)
        XCTAssertEqual(try settle(["web-passwd", "al ice"], stdin: Data("pw\n".utf8)).status, 64)
        XCTAssertEqual(try settle(["web-passwd"], stdin: Data("pw\n".utf8)).status, 64)
    }

    func testSettleWeb_servesTheLedgerReadOnly_andStopsOnSIGTERM() throws {
        try enqueue("o-1", receipt: world.receipt("o-1"))
        let before = [bytes(world.ledgerPath), bytes(world.ledgerPath + "-wal")]
        let (process, base) = try startWeb()
        let overview = try get(base + "/")
        XCTAssertEqual(overview.status, 200)
        XCTAssertTrue(String(decoding: overview.body, as: UTF8.self).contains("local · read-only"))
        XCTAssertEqual(try get(base + "/orders/o-1").status, 200)
        let status = try settle(["status", "o-1", "--json"])
        // The verdict's words name times relative to now ("due since 0s"), which two processes
        // may read a second apart: the rest is byte for byte, the verdict line for line.
        let api = try JSONValue.parse(String(decoding: try get(base + "/api/orders/o-1").body, as: UTF8.self))
        let cli = try JSONValue.parse(status.stdout)
        func withoutVerdict(_ json: JSONValue) -> JSONValue { .object((json.objectMembers ?? []).filter { $0.0 != "verdict" }) }
        XCTAssertEqual(withoutVerdict(api), withoutVerdict(cli), "the API is exactly what settle status --json prints")
        XCTAssertEqual(api["verdict"]?.objectMembers?.map(\.0), cli["verdict"]?.objectMembers?.map(\.0))
        XCTAssertEqual(api["verdict"]?["charged"], cli["verdict"]?["charged"])
        let posted = try client.send(HTTPRequest(method: "POST", url: base + "/orders/o-1/retry",
                                                 headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
                                                 body: Data("csrf=x&note=n".utf8)))
        XCTAssertEqual(posted.status, 403)
        process.send(SIGTERM)
        let result = process.wait()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("web.stopped"), result.stderr)
        XCTAssertEqual([bytes(world.ledgerPath), bytes(world.ledgerPath + "-wal")], before, "the console wrote nothing")
    }

    func testWithAUsersFile_everyRequestNeedsAPassword_onAnyAddress() throws {
        let line = try settle(["web-passwd", "alice"], stdin: Data("s3cret-pass\n".utf8)).stdout
        try world.write("web-users", line, mode: 0o600)
        try webConfig([("users_file", .string("web-users")), ("actions", .bool(true))])
        let check = try settle(["check-config"])
        XCTAssertTrue(check.stdout.contains("web: settle web on 127.0.0.1:8480, users \(world.folder)/web-users (contents redacted), actions on"),
                      check.stdout)
        XCTAssertFalse(check.stdout.contains("pbkdf2"))
        try enqueue("o-1", receipt: world.receipt("o-1"))
        let (_, base) = try startWeb()
        XCTAssertEqual(try get(base + "/").status, 401)
        let ok = try get(base + "/", headers: [HTTPHeader("Authorization", "Basic " + Data("alice:s3cret-pass".utf8).base64EncodedString())])
        XCTAssertEqual(ok.status, 200)
        XCTAssertTrue(String(decoding: ok.body, as: UTF8.self).contains("alice · actions on"))
        try world.write("web-users", line, mode: 0o644)
        let loose = try settle(["web"])
        XCTAssertEqual(loose.status, 78, "a users file others may read is refused")
        XCTAssertTrue(loose.stderr.contains("readable by group or others"), loose.stderr)
    }

    /// DNS rebinding and a forged CSRF time, against the binary: another name is refused 421
    /// before anything is read or written, and `csrf=-9223372036854775808.x` is a 403, not a crash.
    func testTheBinary_refusesAnotherHost_andSurvivesAForgedCSRFTime() throws {
        try webConfig([("actions", .bool(true)), ("hosts", .array([.string("settle.example.com")]))])
        try enqueue("o-1", receipt: world.receipt("o-1"))
        let (process, base) = try startWeb()
        let port = try XCTUnwrap(base.split(separator: ":").last.map(String.init))
        let form = [HTTPHeader("Content-Type", "application/x-www-form-urlencoded"), HTTPHeader("Sec-Fetch-Site", "same-origin")]
        let rebound = try get(base + "/orders/o-1", headers: [HTTPHeader("Host", "attacker.example:\(port)")])
        XCTAssertEqual(rebound.status, 421)
        XCTAssertFalse(String(decoding: rebound.body, as: UTF8.self).contains("o-1"))
        let transfer = try client.send(HTTPRequest(method: "POST", url: base + "/orders/o-1/transfer",
                                                   headers: form + [HTTPHeader("Host", "attacker.example:\(port)")],
                                                   body: Data("csrf=x&to_user=u-mallory&note=n".utf8)))
        XCTAssertEqual(transfer.status, 421)
        XCTAssertEqual(try get(base + "/", headers: [HTTPHeader("Host", "settle.example.com")]).status, 200, "a name in web.hosts")
        for forged in ["-9223372036854775808.x", "9223372036854775807.x"] {
            let posted = try client.send(HTTPRequest(method: "POST", url: base + "/orders/o-1/retry", headers: form,
                                                     body: Data("csrf=\(forged)&note=n".utf8)))
            XCTAssertEqual(posted.status, 403, forged)
        }
        XCTAssertTrue(process.isRunning, "settle web survived the forged token")
        XCTAssertEqual(try get(base + "/").status, 200)
        let result = try settle(["status", "o-1"])
        XCTAssertFalse(result.stdout.contains("u-mallory"), result.stdout)
    }

    /// A non-loopback listener with users still sends their passwords in clear unless TLS is
    /// terminated in front: refused (78) until the configuration says so; check-config agrees
    /// with settle web, and says OK to nothing settle web refuses.
    func testANonLoopbackListener_needsTLSInFront_andCheckConfigAgreesWithSettleWeb() throws {
        let line = try settle(["web-passwd", "alice"], stdin: Data("s3cret-pass\n".utf8)).stdout
        try world.write("web-users", line, mode: 0o600)
        try webConfig([("listen", .string("0.0.0.0:8480")), ("users_file", .string("web-users"))])
        for command in [["web"], ["check-config"]] {
            let refused = try settle(command)
            XCTAssertEqual(refused.status, 78, "\(command)")
            XCTAssertTrue(refused.stderr.contains("set web.tls_in_front: true"), refused.stderr)
            XCTAssertTrue(refused.stderr.contains("would cross the network in clear"), refused.stderr)
        }
        try webConfig([("listen", .string("0.0.0.0:8480"))])
        let open = try settle(["check-config"])
        XCTAssertEqual(open.status, 78, "no OK for a listener settle web refuses: \(open.stdout)")
        XCTAssertTrue(open.stderr.contains("is not a loopback address"), open.stderr)
        try webConfig([("listen", .string("0.0.0.0:8480")), ("users_file", .string("web-users")), ("tls_in_front", .bool(true))])
        let fine = try settle(["check-config"])
        XCTAssertEqual(fine.status, 0, fine.stderr)
        XCTAssertTrue(fine.stdout.contains("web: settle web on 0.0.0.0:8480, users \(world.folder)/web-users (contents redacted), "
                                           + "TLS terminated in front"), fine.stdout)
    }
}
