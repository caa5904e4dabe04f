import Foundation
import SettleBase
import SettleModel

/// Reading a `SignedTransaction` from a JWS payload
/// (https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload).
/// Fields are read leniently because Apple's producers disagree on types: ids can arrive
/// as JSON numbers, dates are milliseconds and may be fractional in Xcode-signed data.
extension SignedTransaction {
    /// Reads the fields from a decoded payload. This does not verify anything: use
    /// `SignedDataVerifier.verifyTransaction` for data from outside, which calls this only once
    /// the signature is good, so every failure here is `payloadInvalid`.
    package init(decoding payload: JSONValue) throws(SignedDataFailure) {
        guard payload.objectMembers != nil else { throw .payloadInvalid("transaction payload is not a JSON object") }
        let transactionId = try Self.requiredText("transactionId", in: payload)
        let originalTransactionId = try Self.requiredText("originalTransactionId", in: payload)
        let bundleId = try Self.requiredText("bundleId", in: payload)
        let productId = try Self.requiredText("productId", in: payload)
        let purchaseDateMs = try Self.optionalInteger("purchaseDate", in: payload)
        let expiresDateMs = try Self.optionalInteger("expiresDate", in: payload)
        let revocationDateMs = try Self.optionalInteger("revocationDate", in: payload)
        let signedDateMs = try Self.optionalInteger("signedDate", in: payload)
        // A transaction without a quantity is for one item: StoreKit omits nothing here in
        // practice, but older simulators and hand-made test data do.
        let quantity = try Self.optionalInteger("quantity", in: payload) ?? 1
        guard let count = Int(exactly: quantity), count >= 1 else {
            throw .payloadInvalid("transaction payload has quantity \(quantity)")
        }
        let environment = try Self.requiredText("environment", in: payload)
        // Text Apple never sends is refused as `checkEnvironment` refuses it, never read as production.
        guard let known = AppleEnvironment(rawValue: environment) else {
            throw .environmentMismatch("environment \(environment) is not accepted")
        }
        let type = try Self.optionalString("type", in: payload)
        let inAppOwnershipType = try Self.optionalString("inAppOwnershipType", in: payload)
        let appAccountToken = try Self.optionalString("appAccountToken", in: payload).flatMap { (text) throws(SignedDataFailure) in
            try Self.normalizedUUID(text)
        }
        let isUpgraded = try Self.optionalBool("isUpgraded", in: payload) ?? false
        self.init(transactionId: transactionId, originalTransactionId: originalTransactionId, bundleId: bundleId, productId: productId,
                  purchaseDateMs: purchaseDateMs, expiresDateMs: expiresDateMs, revocationDateMs: revocationDateMs,
                  signedDateMs: signedDateMs, quantity: count, environment: known, type: type,
                  inAppOwnershipType: inAppOwnershipType, appAccountToken: appAccountToken, isUpgraded: isUpgraded, payload: payload)
        self.appTransactionId = try Self.optionalString("appTransactionId", in: payload).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// An empty token is read as none; anything else must be a UUID, which is all Apple
    /// accepts at purchase (error 4000183 otherwise).
    package static func normalizedUUID(_ text: String) throws(SignedDataFailure) -> String? {
        guard !text.isEmpty else { return nil }
        guard let uuid = UUID(uuidString: text) else {
            throw .payloadInvalid("transaction payload field appAccountToken is not a UUID")
        }
        return uuid.uuidString.lowercased()
    }

    private static func requiredText(_ key: String, in payload: JSONValue) throws(SignedDataFailure) -> String {
        guard let value = payload[key], value != .null else { throw .payloadInvalid("transaction payload has no \(key)") }
        guard let text = value.looseString, !text.isEmpty else {
            throw .payloadInvalid("transaction payload field \(key) is a \(value.typeName), expected a string")
        }
        return text
    }

    private static func optionalString(_ key: String, in payload: JSONValue) throws(SignedDataFailure) -> String? {
        guard let value = payload[key], value != .null else { return nil }
        guard case let .string(text) = value else {
            throw .payloadInvalid("transaction payload field \(key) is a \(value.typeName), expected a string")
        }
        return text
    }

    private static func optionalInteger(_ key: String, in payload: JSONValue) throws(SignedDataFailure) -> Int64? {
        guard let value = payload[key], value != .null else { return nil }
        guard let number = value.looseInt64 else {
            throw .payloadInvalid("transaction payload field \(key) is not a number")
        }
        return number
    }

    private static func optionalBool(_ key: String, in payload: JSONValue) throws(SignedDataFailure) -> Bool? {
        guard let value = payload[key], value != .null else { return nil }
        guard case let .bool(flag) = value else {
            throw .payloadInvalid("transaction payload field \(key) is a \(value.typeName), expected a boolean")
        }
        return flag
    }
}
