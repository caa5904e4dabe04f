import Foundation
import SettleBase

/// A StoreKit 2 transaction as the simulated App Store Server API knows it.
package struct SimulatedSignedTransaction: Sendable, Equatable {
    package var transactionId: String
    package var originalTransactionId: String?
    package var productId: String
    package var bundleId: String
    /// `Production`, `Sandbox`, or (to test refusal) `Xcode`.
    package var environment: String
    package var purchaseDateMs: Int64
    package var quantity: Int
    package var revocationDateMs: Int64?
    package var expiresDateMs: Int64?
    package var type: String
    /// Sent as `appAccountToken`, exactly as given.
    package var appAccountToken: String?
    /// Sent as `isUpgraded: true` (omitted when false, as Apple does).
    package var isUpgraded: Bool
    /// Sent as `appTransactionId` (the Apple Account's id for the app), when set.
    package var appTransactionId: String? = nil
    /// Sent as `inAppOwnershipType`: `PURCHASED`, or `FAMILY_SHARED` for a family member's copy.
    package var inAppOwnershipType = "PURCHASED"
    /// With `revocationDateMs`: Apple's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`,
    /// `FAMILY_REVOKE`) and `revocationPercentage` (milliunits), each sent only when set.
    package var revocationType: String? = nil
    package var revocationPercentage: Int64? = nil
    /// Fields Apple added after settle was written (1.21's `billingPlanType`, one of a later
    /// version), signed as Apple would: settle must read the transaction regardless.
    package var laterFields: [String: JSONValue] = [:]
    /// Sent as `price` and `currency` exactly as given (Apple: milliunits and ISO 4217, together),
    /// so a test can send what Apple would and what it never should.
    package var price: JSONValue? = nil
    package var currency: JSONValue? = nil

    package init(transactionId: String, originalTransactionId: String? = nil, productId: String, bundleId: String,
                environment: String = "Production", purchaseDateMs: Int64 = 1_764_410_645_000, quantity: Int = 1,
                revocationDateMs: Int64? = nil, expiresDateMs: Int64? = nil, type: String = "Consumable",
                appAccountToken: String? = nil, isUpgraded: Bool = false) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.bundleId = bundleId
        self.environment = environment
        self.purchaseDateMs = purchaseDateMs
        self.quantity = quantity
        self.revocationDateMs = revocationDateMs
        self.expiresDateMs = expiresDateMs
        self.type = type
        self.appAccountToken = appAccountToken
        self.isUpgraded = isUpgraded
    }

    /// The JWSTransactionDecodedPayload, as Apple signs it.
    package func payload(signedAt signedDateMs: Int64) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("transactionId", .string(transactionId)),
            ("originalTransactionId", .string(originalTransactionId ?? transactionId)),
            ("bundleId", .string(bundleId)),
            ("productId", .string(productId)),
            ("purchaseDate", .number(purchaseDateMs)),
            ("originalPurchaseDate", .number(purchaseDateMs)),
            ("quantity", .number(quantity)),
            ("type", .string(type)),
            ("inAppOwnershipType", .string(inAppOwnershipType)),
            ("signedDate", .number(signedDateMs)),
            ("environment", .string(environment)),
            ("transactionReason", .string("PURCHASE")),
            ("storefront", .string("USA")),
        ]
        if let expires = expiresDateMs { members.append(("expiresDate", .number(expires))) }
        if let token = appAccountToken { members.append(("appAccountToken", .string(token))) }
        if isUpgraded { members.append(("isUpgraded", .bool(true))) }
        if let appTransactionId { members.append(("appTransactionId", .string(appTransactionId))) }
        if let price { members.append(("price", price)) }
        if let currency { members.append(("currency", currency)) }
        if let revoked = revocationDateMs {
            members.append(("revocationDate", .number(revoked)))
            members.append(("revocationReason", .number(0)))
            if let revocationType { members.append(("revocationType", .string(revocationType))) }
            if let revocationPercentage { members.append(("revocationPercentage", .number(revocationPercentage))) }
        }
        members += laterFields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return .object(members)
    }

    /// A device's signed transaction, signed by the simulator's chain.
    package func signed(at signedDateMs: Int64) throws -> String {
        try SimulatorSigningChain.sign(payload(signedAt: signedDateMs))
    }
}

/// How the simulated Server API answers one Get Transaction Info request.
package enum SimulatedServerAnswer: Sendable, Equatable {
    /// What Apple would say: the signed transaction if this environment has it, else 4040010.
    case transaction
    /// 404 with errorCode 4040010.
    case notFound
    /// 401 with no body, as production answers an app that was never released.
    case unauthorized
    /// 429 with this Retry-After header.
    case rateLimited(retryAfter: String)
    /// An error status with an Apple error code, e.g. (500, 5000001) or (404, 4040002).
    case error(status: Int, code: Int)
}

/// What the simulated Server API does with one transaction id: `answers` one per request,
/// then `.transaction` for ever.
package struct TransactionScript: Sendable, Equatable {
    package var transaction: SimulatedSignedTransaction?
    package var answers: [SimulatedServerAnswer]

    package init(transaction: SimulatedSignedTransaction?, answers: [SimulatedServerAnswer] = []) {
        self.transaction = transaction
        self.answers = answers
    }
}

/// Who may call the simulated Server API: the bearer token must be signed by this key and
/// carry these claims, or the answer is 401.
package struct ServerAPICredentials: Sendable {
    package var issuerId: String
    package var keyId: String
    package var bundleId: String
    package var publicKey: ES256PublicKey

    package init(issuerId: String, keyId: String, bundleId: String, publicKey: ES256PublicKey) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.bundleId = bundleId
        self.publicKey = publicKey
    }

    /// Why a bearer token is refused, or nil when it is good at `now`.
    package func problem(with authorization: String?, now: Int64) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Base64URL.decode(parts[0]), let claimsData = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]),
              let header = try? JSONValue.parse(headerData), let claims = try? JSONValue.parse(claimsData) else {
            return "not a compact JWS"
        }
        guard header["alg"] == .string("ES256") else { return "alg is not ES256" }
        guard header["kid"] == .string(keyId) else { return "wrong kid" }
        guard header["typ"] == .string("JWT") else { return "typ is not JWT" }
        guard ES256.verify(signature: signature, message: Data("\(parts[0]).\(parts[1])".utf8), publicKey: publicKey) else {
            return "signature does not verify"
        }
        guard claims["iss"] == .string(issuerId) else { return "wrong iss" }
        guard claims["aud"] == .string("appstoreconnect-v1") else { return "wrong aud" }
        guard claims["bid"] == .string(bundleId) else { return "wrong bid" }
        guard let iat = claims["iat"]?.looseInt64, let exp = claims["exp"]?.looseInt64 else { return "no iat or exp" }
        guard iat <= now + 60 else { return "iat in the future" }
        guard exp > now else { return "expired" }
        guard exp - iat <= 3600 else { return "exp more than 60 minutes after iat" }
        return nil
    }
}
