import Foundation
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleAppStore
@testable import SettleAppStoreSimulator

/// `SignedDataVerifier.verifyNotification`: the outer JWS as any signed data, then the
/// notification's own rules (apple-protocol.md 4).
final class NotificationVerificationTests: XCTestCase {
    let bundleId = "com.example.game"
    let now = Date(timeIntervalSince1970: 1_764_410_700)
    var signedMs: Int64 { Int64(now.timeIntervalSince1970 * 1000) }

    func verifier(acceptSandbox: Bool = true, appAppleId: String? = "1234567890") throws -> SignedDataVerifier {
        SignedDataVerifier(rootCertificates: [try SimulatorSigningChain.root()], bundleId: bundleId, acceptSandbox: acceptSandbox,
                           appAppleId: appAppleId)
    }

    func notification(_ type: String = "ONE_TIME_CHARGE", environment: String = "Production", transactionEnvironment: String? = nil,
                      appAppleId: Int64? = 1_234_567_890) -> SimulatedNotification {
        let transaction = SimulatedSignedTransaction(transactionId: "700", productId: "coins", bundleId: bundleId,
                                                     environment: transactionEnvironment ?? environment, appAccountToken: "6F1E4C2A-5B3D-4E8F-9A0B-1C2D3E4F5A6B")
        return SimulatedNotification(type: type, uuid: "0b0e4c5e-7a41-4d63-9a2f-3a1c6a1f0d11", transaction: transaction, bundleId: bundleId,
                                     environment: environment, appAppleId: appAppleId, signedDateMs: signedMs)
    }

    func testAppleSignedNotification_isVerified_withItsNestedTransaction() throws {
        let verified = try verifier().verifyNotification(try notification().signed(), now: now).get()
        XCTAssertEqual(verified.uuid, "0b0e4c5e-7a41-4d63-9a2f-3a1c6a1f0d11")
        XCTAssertEqual(verified.type, "ONE_TIME_CHARGE")
        XCTAssertEqual(verified.environment, .production)
        XCTAssertEqual(verified.transaction?.transactionId, "700")
        XCTAssertEqual(verified.transaction?.appAccountToken, "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b")
        XCTAssertEqual(verified.effect, .purchase)
    }

    func testEnvironment_comesFromData_andSandboxIsRefusedWhenNotAccepted() throws {
        let sandbox = try notification(environment: "Sandbox").signed()
        XCTAssertEqual(try verifier().verifyNotification(sandbox, now: now).get().environment, .sandbox)
        guard case .failure(.sandboxNotAccepted) = try verifier(acceptSandbox: false).verifyNotification(sandbox, now: now) else {
            return XCTFail("sandbox accepted against the configuration")
        }
    }

    func testNotification_whoseEnvironmentIsNotApplesSpelling_isRefused_neverReadAsProduction() throws {
        for text in ["production", "PRODUCTION", "LocalTesting"] {
            let signed = try notification(environment: text).signed()
            guard case .failure(.environmentMismatch) = try verifier().verifyNotification(signed, now: now) else {
                return XCTFail("a notification from environment \(text) was accepted")
            }
        }
    }

    func testNestedTransactionFromAnotherEnvironment_isRefused() throws {
        let mixed = try notification(environment: "Production", transactionEnvironment: "Sandbox").signed()
        guard case .failure(.environmentMismatch) = try verifier().verifyNotification(mixed, now: now) else {
            return XCTFail("a sandbox transaction inside a production notification was accepted")
        }
    }

    func testAppAppleId_mustMatchInProduction_butSandboxHasNone() throws {
        guard case .failure(.bundleMismatch) = try verifier().verifyNotification(try notification(appAppleId: 42).signed(), now: now) else {
            return XCTFail("another app's production notification was accepted")
        }
        XCTAssertNoThrow(try verifier().verifyNotification(try notification(environment: "Sandbox", appAppleId: nil).signed(), now: now).get())
    }

    func testAnotherBundle_isRefused() throws {
        var other = notification()
        other.bundleId = "com.example.other"
        guard case .failure(.bundleMismatch) = try verifier().verifyNotification(try other.signed(), now: now) else {
            return XCTFail("another app's notification was accepted")
        }
    }

    func testAlteredPayload_failsTheSignature() throws {
        let parts = try notification().signed().split(separator: ".")
        let altered = try notification("REFUND").payload()
        let forged = "\(parts[0]).\(Base64URL.encode(altered.data)).\(parts[2])"
        guard case .failure(.signatureInvalid) = try verifier().verifyNotification(forged, now: now) else {
            return XCTFail("an altered notification was accepted")
        }
    }

    func testTypes_mapToTheirEffects() throws {
        let effects = try ["ONE_TIME_CHARGE", "DID_RENEW", "REFUND", "REVOKE", "REFUND_REVERSED", "CONSUMPTION_REQUEST", "EXPIRED", "NEW_TYPE"]
            .map { try verifier().verifyNotification(try notification($0).signed(), now: now).get().effect }
        XCTAssertEqual(effects, [.purchase, .purchase, .refund, .refund, .refundReversed, .consumptionRequest, .informational, .informational])
    }
}
