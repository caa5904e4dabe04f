import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleAppStore

/// The chain cache may only save work: whatever the uncached path refuses, a verifier
/// that has already cached the chain refuses too, with the same reason.
final class VerifiedChainCacheTests: XCTestCase {
    private var pki: TestPKI!

    override func setUpWithError() throws {
        pki = try TestPKI()
    }

    /// A verifier whose cache already holds the standard test chain.
    private func warmedVerifier() throws -> SignedDataVerifier {
        let verifier = pki.verifier()
        XCTAssertNoThrow(try verifier.verifyTransaction(pki.token(TestPKI.transaction()), now: Date()).get())
        XCTAssertEqual(verifier.verifiedChains.count, 1)
        return verifier
    }

    func testTokensFromTheSameChain_shareOneEntry() throws {
        let verifier = try warmedVerifier()
        for index in 0..<20 {
            let token = try pki.token(TestPKI.transaction([("transactionId", .string("\(3_000_000 + index)"))]))
            XCTAssertNoThrow(try verifier.verifyTransaction(token, now: Date()).get())
        }
        XCTAssertEqual(verifier.verifiedChains.count, 1)
    }

    func testCachedChain_tokenSignedAfterItsCertificatesExpired_isRefusedAsUncached() throws {
        let verifier = try warmedVerifier()
        let token = try pki.token(TestPKI.transaction([("signedDate", .number("2208988800000"))]))  // 2040-01-01
        let cached = assertRefused(verifier.verifyTransaction(token, now: Date()), "chain_invalid")
        let uncached = assertRefused(pki.verifier().verifyTransaction(token, now: Date()), "chain_invalid")
        XCTAssertEqual(cached, uncached)
        XCTAssertTrue(cached?.description.contains("expired") == true, cached?.description ?? "")
    }

    func testCachedChain_tokenSignedBeforeItsCertificatesWereValid_isRefused() throws {
        let verifier = try warmedVerifier()
        let token = try pki.token(TestPKI.transaction([("signedDate", .number("1577836800000"))]))  // 2020-01-01
        let failure = assertRefused(verifier.verifyTransaction(token, now: Date()), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("not yet valid") == true, failure?.description ?? "")
    }

    func testCachedChain_tokenWithoutSignedDate_isCheckedAtNowEachTime() throws {
        let verifier = try warmedVerifier()
        let token = try pki.token(TestPKI.transaction([("signedDate", .null)]))
        XCTAssertNoThrow(try verifier.verifyTransaction(token, now: Date(timeIntervalSince1970: 1_735_689_600)).get())
        assertRefused(verifier.verifyTransaction(token, now: Date(timeIntervalSince1970: 2_208_988_800)), "chain_invalid")
    }

    func testCachedChain_signatureByAnotherKey_isInvalid() throws {
        let verifier = try warmedVerifier()
        let other = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testSigningKey.p8"))
        let token = try pki.token(TestPKI.transaction(), key: other)
        XCTAssertEqual(verifier.verifyTransaction(token, now: Date()), .failure(.signatureInvalid))
    }

    func testCachedChain_changedPayload_isInvalid() throws {
        let verifier = try warmedVerifier()
        var parts = try pki.token(TestPKI.transaction()).split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(TestPKI.transaction([("quantity", .number("99"))]).data)
        XCTAssertEqual(verifier.verifyTransaction(parts.joined(separator: "."), now: Date()), .failure(.signatureInvalid))
    }

    func testCachedIntermediate_withADifferentLeaf_isCheckedAgain() throws {
        let verifier = try warmedVerifier()
        let chain = ["testInvalidOIDLeaf.pem", "testIntermediate.pem", "testCA.pem"]
        let failure = assertRefused(verifier.verifyTransaction(try pki.token(TestPKI.transaction(), chain: chain), now: Date()),
                                    "chain_invalid")
        XCTAssertTrue(failure?.description.contains("receipt-signer") == true, failure?.description ?? "")
    }

    func testCachedLeaf_underADifferentIntermediate_isCheckedAgain() throws {
        let verifier = try warmedVerifier()
        let chain = ["testLeaf.pem", "testInvalidOIDIntermediate.pem", "testCA.pem"]
        assertRefused(verifier.verifyTransaction(try pki.token(TestPKI.transaction(), chain: chain), now: Date()), "chain_invalid")
    }

    func testRefusedChains_areNeverCached() throws {
        let verifier = pki.verifier()
        let chain = ["testInvalidOIDLeaf.pem", "testIntermediate.pem", "testCA.pem"]
        for _ in 0..<2 {
            assertRefused(verifier.verifyTransaction(try pki.token(TestPKI.transaction(), chain: chain), now: Date()), "chain_invalid")
        }
        let expired = try pki.token(TestPKI.transaction([("signedDate", .number("2208988800000"))]))
        assertRefused(verifier.verifyTransaction(expired, now: Date()), "chain_invalid")
        XCTAssertEqual(verifier.verifiedChains.count, 0)
    }

    func testGenuineAppleChain_cachedAtItsSignedDate_stillFailsAtToday() throws {
        let verifier = SignedDataVerifier(rootCertificates: [try JWSFixtures.appleRootG3()], bundleId: "co.ringalarm", acceptSandbox: true)
        let token = try JWSFixtures.genuineRenewalInfo()
        XCTAssertNoThrow(try verifier.verifySignedData(token, now: Date()).get())
        XCTAssertEqual(verifier.verifiedChains.count, 1)
        let failure = assertRefused(verifier.verifySignedData(token, checkTime: .fixed(Date())), "chain_invalid")
        XCTAssertTrue(failure?.description.contains("expired") == true, failure?.description ?? "")
    }

    func testCache_neverHoldsMoreThanItsCapacity() throws {
        let cache = VerifiedChainCache(capacity: 2)
        let key = try ES256PrivateKey(pem: JWSFixtures.text("test-chain/testLeaf.key")).publicKey
        let validity = Date.distantPast...Date.distantFuture
        for index in 0..<5 {
            cache.insert(VerifiedChainCache.Entry(leafKey: key, validity: validity),
                         for: VerifiedChainCache.Key(leaf: Data([UInt8(index)]), intermediate: Data()))
            XCTAssertLessThanOrEqual(cache.count, 2)
        }
        XCTAssertNotNil(cache.entry(for: VerifiedChainCache.Key(leaf: Data([4]), intermediate: Data())))
    }
}
