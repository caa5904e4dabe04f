import Foundation
import XCTest
@testable import SettleBase
@testable import SettleModel
@testable import SettleAppStore
@testable import SettleAppStoreSimulator

/// A signed AppTransaction is verified like a signed transaction: Apple's chain at its
/// `receiptCreationDate`, the bundle, then `receiptType` as the environment (apple-protocol.md 3.4).
final class AppTransactionVerificationTests: XCTestCase {
    let bundleId = "com.example.game"
    let signedMs: Int64 = 1_764_410_645_000

    func verifier(acceptSandbox: Bool = true, appAppleId: String? = "1234567890") throws -> SignedDataVerifier {
        SignedDataVerifier(rootCertificates: [try SimulatorSigningChain.root()], bundleId: bundleId, acceptSandbox: acceptSandbox,
                           appAppleId: appAppleId)
    }

    func signed(_ app: SimulatedAppTransaction, at ms: Int64? = nil) throws -> String { try app.signed(at: ms ?? signedMs) }

    func code(_ result: Result<AppTransaction, SignedDataFailure>) -> String? {
        if case let .failure(failure) = result { return failure.code }
        return nil
    }

    func testGenuineAppTransaction_yieldsItsAppTransactionId_environmentAndSigningTime() throws {
        let token = try signed(SimulatedAppTransaction(appTransactionId: "704289572311", bundleId: bundleId, appAppleId: 1_234_567_890))
        XCTAssertEqual(try verifier().verifyAppTransaction(token, now: Date()).get(),
                       AppTransaction(appTransactionId: "704289572311", bundleId: bundleId, environment: .production, signedDateMs: signedMs))
    }

    func testAppTransaction_ofAnotherApp_orAnotherAppAppleId_isABundleMismatch() throws {
        XCTAssertEqual(code(try verifier().verifyAppTransaction(
            try signed(SimulatedAppTransaction(appTransactionId: "1", bundleId: "com.example.other")), now: Date())), "bundle_mismatch")
        XCTAssertEqual(code(try verifier().verifyAppTransaction(
            try signed(SimulatedAppTransaction(appTransactionId: "1", bundleId: bundleId, appAppleId: 42)), now: Date())), "bundle_mismatch")
    }

    func testAppTransaction_fromSandboxWhenNotAccepted_orXcode_isRefused_andWithoutAnId_isPayloadInvalid() throws {
        let sandbox = try signed(SimulatedAppTransaction(appTransactionId: "1", bundleId: bundleId, receiptType: "Sandbox"))
        XCTAssertEqual(try verifier().verifyAppTransaction(sandbox, now: Date()).get().environment, .sandbox)
        XCTAssertEqual(code(try verifier(acceptSandbox: false).verifyAppTransaction(sandbox, now: Date())), "environment_mismatch")
        XCTAssertEqual(code(try verifier().verifyAppTransaction(
            try signed(SimulatedAppTransaction(appTransactionId: "1", bundleId: bundleId, receiptType: "Xcode")), now: Date())),
                       "environment_mismatch")
        XCTAssertEqual(code(try verifier().verifyAppTransaction(
            try signed(SimulatedAppTransaction(appTransactionId: "", bundleId: bundleId)), now: Date())), "payload_invalid")
    }

    func testAppTransaction_isCheckedAtItsReceiptCreationDate_soOneSignedOutsideTheChainsValidityFails_whateverTheTimeNow() throws {
        // The simulator's leaf is valid from 2023-01-05 to 2033-01-01.
        let before = try signed(SimulatedAppTransaction(appTransactionId: "1", bundleId: bundleId), at: 1_600_000_000_000)
        XCTAssertEqual(code(try verifier().verifyAppTransaction(before, now: Date())), "chain_invalid")
        let inside = try signed(SimulatedAppTransaction(appTransactionId: "1", bundleId: bundleId))
        XCTAssertNoThrow(try verifier().verifyAppTransaction(inside, now: Date(timeIntervalSince1970: 2_100_000_000)).get())
    }

    func testSignedTransaction_thatIsNotAnAppTransaction_isRefused_andAChangedPayloadBreaksTheSignature() throws {
        let transaction = try SimulatedSignedTransaction(transactionId: "9", productId: "p", bundleId: bundleId).signed(at: signedMs)
        XCTAssertEqual(code(try verifier().verifyAppTransaction(transaction, now: Date())), "payload_invalid")
        let token = try signed(SimulatedAppTransaction(appTransactionId: "704289572311", bundleId: bundleId))
        var parts = token.split(separator: ".").map(String.init)
        let forged = JSONValue.object([("receiptType", .string("Production")), ("bundleId", .string(bundleId)),
                                       ("receiptCreationDate", .number(signedMs)), ("appTransactionId", .string("1"))])
        parts[1] = Base64URL.encode(forged.data)
        XCTAssertEqual(code(try verifier().verifyAppTransaction(parts.joined(separator: "."), now: Date())), "signature_invalid")
    }
}
