import Dispatch
import Synchronization
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleGooglePlay

final class GoogleAccessTokenSourceTests: XCTestCase {
    func testAccessToken_postsAnRS256AssertionWithKidAndThePlayClaims_andTheFakeAcceptsItsSignature() throws {
        let world = try PlayTestWorld()
        let token = try world.tokens.accessToken()
        XCTAssertTrue(token.hasPrefix("ya29.fake-"))
        XCTAssertEqual(world.fake.refusedAssertions, [])
        let assertion = try XCTUnwrap(world.fake.acceptedAssertions.first)
        XCTAssertEqual(assertion.header["alg"], .string("RS256"))
        XCTAssertEqual(assertion.header["kid"], .string("key-1"))
        XCTAssertEqual(assertion.claims["iss"], .string(PlayTestWorld.email))
        XCTAssertEqual(assertion.claims["scope"], .string("https://www.googleapis.com/auth/androidpublisher"))
        XCTAssertEqual(assertion.claims["aud"], .string(world.server.baseURL + "/token"))
        XCTAssertEqual(assertion.claims["iat"]?.looseInt64, world.time.unixSeconds)
        XCTAssertEqual(assertion.claims["exp"]?.looseInt64, world.time.unixSeconds + 3600)
    }

    func testAccessToken_isReusedUntilShortlyBeforeExpiresIn_thenFetchedAgain() throws {
        let world = try PlayTestWorld()
        let first = try world.tokens.accessToken()
        world.time.advance(by: 3600 - 300 - 1)
        XCTAssertEqual(try world.tokens.accessToken(), first)
        XCTAssertEqual(world.fake.tokenRequests, 1)
        world.time.advance(by: 1)
        XCTAssertNotEqual(try world.tokens.accessToken(), first)
        XCTAssertEqual(world.fake.tokenRequests, 2)
    }

    func testAccessToken_manyConcurrentCallers_shareOneExchange() throws {
        let world = try PlayTestWorld()
        // The token endpoint holds its answer until every caller has arrived, so callers that
        // did not wait for the one exchange would each reach it.
        let release = DispatchSemaphore(value: 0)
        let fake = world.fake
        let arrived = Mutex(0)
        let gated = try LoopbackHTTPServer { request in
            if request.path == "/token" {
                arrived.withLock { $0 += 1 }
                release.wait()
            }
            return fake.handle(request)
        }
        defer { gated.stop() }
        world.fake.expectTokenURL(gated.baseURL + "/token")
        let tokens = GoogleAccessTokenSource(key: world.key, tokenURL: gated.baseURL + "/token", client: HTTPClient(), time: world.time)
        let callers = 8
        let results = Mutex<[String]>([])
        let group = DispatchGroup()
        // Threads of their own: the global queue runs only about as many blocked items as there are cores.
        for _ in 0..<callers {
            group.enter()
            Thread {
                if let token = try? tokens.accessToken() { results.withLock { $0.append(token) } }
                group.leave()
            }.start()
        }
        let deadline = Date().addingTimeInterval(20)
        while (arrived.withLock({ $0 }) < 1 || tokens.waitingCallers < callers - 1) && Date() < deadline { usleep(1000) }
        // Released once per request that arrived, so a source without the shared exchange fails
        // the count below rather than hanging.
        for _ in 0..<max(1, arrived.withLock { $0 }) { release.signal() }
        XCTAssertEqual(group.wait(timeout: .now() + 20), .success)
        XCTAssertEqual(world.fake.tokenRequests, 1)
        let tokensSeen = results.withLock { $0 }
        XCTAssertEqual(tokensSeen.count, callers)
        XCTAssertEqual(Set(tokensSeen).count, 1)
    }

    func testAccessToken_whenTheTokenEndpointRefusesTheAssertion_isAConfigurationFault() throws {
        let world = try PlayTestWorld()
        let impostor = ServiceAccountKey(clientEmail: PlayTestWorld.email, privateKeyId: "key-1", privateKey: PlayTestKeys.stranger)
        let tokens = GoogleAccessTokenSource(key: impostor, tokenURL: world.server.baseURL + "/token", client: HTTPClient(), time: world.time)
        XCTAssertThrowsError(try tokens.accessToken()) { error in
            let error = error as! PlayAPIError
            XCTAssertEqual(error.kind, .configuration)
            XCTAssertEqual(error.status, 400)
            XCTAssertEqual(error.reason, "invalid_grant")
            XCTAssertTrue(error.message.contains("Invalid JWT Signature"), error.message)
        }
        XCTAssertEqual(world.fake.refusedAssertions.count, 1)
    }

    func testAccessToken_when5xx429OrNoAnswer_isTemporary_andFetchedAgainOnceItsCoolDownIsOver() throws {
        let world = try PlayTestWorld()
        world.fake.failNextTokenRequests(.status(503), .status(429, retryAfter: "30"))
        XCTAssertEqual(Self.kind { try world.tokens.accessToken() }, .unavailable)
        world.time.advance(by: Double(GoogleAccessTokenSource.failureCoolDown))
        XCTAssertThrowsError(try world.tokens.accessToken()) { XCTAssertEqual(($0 as! PlayAPIError).retryAfter, 30) }
        world.time.advance(by: 30)
        XCTAssertNoThrow(try world.tokens.accessToken())
        world.server.stop()
        let unreachable = GoogleAccessTokenSource(key: world.key, tokenURL: world.server.baseURL + "/token", client: HTTPClient(),
                                                  time: world.time)
        XCTAssertEqual(Self.kind { try unreachable.accessToken() }, .unavailable)
    }

    func testAFailedExchange_isRememberedForItsCoolDown_orGooglesRetryAfter_insteadOfAskedAgainByEveryCall() throws {
        let world = try PlayTestWorld()
        world.fake.failNextTokenRequests(.status(503))
        for _ in 0..<40 { XCTAssertEqual(Self.kind { try world.tokens.accessToken() }, .unavailable) }
        XCTAssertEqual(world.fake.tokenRequests, 1, "every call asked a failing token endpoint again")
        world.time.advance(by: Double(GoogleAccessTokenSource.failureCoolDown - 1))
        XCTAssertEqual(Self.kind { try world.tokens.accessToken() }, .unavailable)
        XCTAssertEqual(world.fake.tokenRequests, 1)
        // The cool-down is over: asked again. A 429's Retry-After longer than the cool-down is honoured.
        world.time.advance(by: 1)
        world.fake.failNextTokenRequests(.status(429, retryAfter: "45"))
        XCTAssertEqual(Self.kind { try world.tokens.accessToken() }, .unavailable)
        world.time.advance(by: 44)
        XCTAssertThrowsError(try world.tokens.accessToken()) { XCTAssertEqual(($0 as! PlayAPIError).retryAfter, 45) }
        XCTAssertEqual(world.fake.tokenRequests, 2)
        world.time.advance(by: 1)
        XCTAssertNoThrow(try world.tokens.accessToken())
        XCTAssertEqual(world.fake.tokenRequests, 3)
        // A refused assertion (a configuration fault) too.
        world.tokens.invalidate(try world.tokens.accessToken())
        world.fake.failNextTokenRequests(.status(400, reason: "invalid_grant"))
        for _ in 0..<5 { XCTAssertNotNil(Self.kind { try world.tokens.accessToken() }) }
        XCTAssertEqual(world.fake.tokenRequests, 4)
    }

    func testInvalidate_dropsOnlyTheRejectedToken() throws {
        let world = try PlayTestWorld()
        let first = try world.tokens.accessToken()
        world.tokens.invalidate("some-older-token")
        XCTAssertEqual(try world.tokens.accessToken(), first)
        world.tokens.invalidate(first)
        XCTAssertNotEqual(try world.tokens.accessToken(), first)
        XCTAssertEqual(world.fake.tokenRequests, 2)
    }

    static func kind(_ body: () throws -> Any) -> PlayAPIError.Kind? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? PlayAPIError)?.kind
        }
    }
}
