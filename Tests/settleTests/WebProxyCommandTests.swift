import Foundation
import SettleBase
import XCTest
@testable import SettleApp

/// `settle web` with `web.auth: proxy` through the binary (issue 36): check-config names the
/// missing key; a started console refuses a spoofed header from a peer that is no trusted proxy,
/// and takes the user (and role) from the trusted one, with a sign-in in `settle audit`.
final class WebProxyCommandTests: WebEndToEndTestCase {
    func webConfig(_ web: [(String, JSONValue)]) throws {
        try world.writeConfig(overrides: [("web", .object(web))])
    }

    let proxy: [(String, JSONValue)] = [("auth", .string("proxy")), ("proxy_user_header", .string("X-Forwarded-User")),
                                        ("actions", .bool(true)), ("roles", .object([("sam", .string("support"))]))]

    func testCheckConfig_namesTheMissingKey_andPrintsTheProxyMode() throws {
        try webConfig(proxy)
        let missing = try settle(["check-config"])
        XCTAssertEqual(missing.status, 78)
        XCTAssertTrue(missing.stderr.contains("web.trusted_proxies: required with web.auth proxy"), missing.stderr)
        XCTAssertEqual(try settle(["web"]).status, 78, "settle web refuses it too")
        try webConfig(proxy + [("trusted_proxies", .array([.string("127.0.0.1")]))])
        let ok = try settle(["check-config"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("users from X-Forwarded-User set by trusted proxies (default role viewer, "
                                         + "1 named)"), ok.stdout)
    }

    func testASpoofedHeader_isRefused_andTheTrustedProxysUserSignsInOnce() throws {
        try enqueue("o-1", receipt: world.receipt("o-1"))
        try webConfig(proxy + [("trusted_proxies", .array([.string("10.0.0.0/8")]))])
        let (stranger, strangerBase) = try startWeb()
        let spoofed = try get(strangerBase + "/", headers: [HTTPHeader("X-Forwarded-User", "sam")])
        XCTAssertEqual(spoofed.status, 403)
        stranger.send(SIGTERM)
        XCTAssertTrue(stranger.wait().stderr.contains("web.proxy_identity_refused"))

        try webConfig(proxy + [("trusted_proxies", .array([.string("127.0.0.1")]))])
        let (process, base) = try startWeb()
        let page = try get(base + "/", headers: [HTTPHeader("X-Forwarded-User", "sam"),
                                                 HTTPHeader("X-Forwarded-For", "192.0.2.44")])
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(String(decoding: page.body, as: UTF8.self).contains("sam · actions on"))
        XCTAssertEqual(try get(base + "/audit", headers: [HTTPHeader("X-Forwarded-User", "sam")]).status, 200)
        process.send(SIGTERM)
        _ = process.wait()
        let lines = try settle(["audit", "--json"]).stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "one sign-in for two requests: \(lines)")
        let entry = try JSONValue.parse(String(lines[0]))
        XCTAssertEqual(entry["action"], .string("sign_in"))
        XCTAssertEqual(entry["actor"], .string("sam"))
        XCTAssertEqual(entry["role"], .string("support"))
        XCTAssertEqual(entry["source"], .string("192.0.2.44"))
    }
}
