import Foundation
import SettleBase
import SettleGooglePlay

/// `purchases.subscriptions.acknowledge` as Google answers it since 2025-11-19: an optional body
/// whose `externalAccountIds.obfuscatedAccountId` (at most 64 characters) Google then shows on
/// the purchase as `externalAccountIdentifiers.obfuscatedExternalAccountId`.
extension FakeGooglePlay {
    /// The bodies settle sent with acknowledges of `token`'s subscription, in order (none: an empty array).
    package func acknowledgeBodies(_ token: String) -> [JSONValue] {
        state.withLock { $0.acknowledgeBodies[token] ?? [] }
    }

    static func acknowledgeSubscription(_ s: inout State, token: String, body: Data) -> HTTPServerResponse {
        var accountId: String?
        if !body.isEmpty {
            guard let json = try? JSONValue.parse(body), json.objectMembers != nil else {
                return error(400, reason: "badRequest", "Invalid JSON payload received.")
            }
            s.acknowledgeBodies[token, default: []].append(json)
            if let ids = json["externalAccountIds"] {
                guard case let .string(id)? = ids["obfuscatedAccountId"], !id.isEmpty, id.count <= 64,
                      !s.refusesAccountIds else {
                    return error(400, reason: "invalid", "Invalid externalAccountIds.obfuscatedAccountId.")
                }
                accountId = id
            }
        }
        let acknowledged = SubscriptionPurchaseV2.AcknowledgementState.acknowledged.rawValue
        s.subscriptions[token]!.rawAcknowledgementState = acknowledged
        if let accountId { s.subscriptions[token]!.obfuscatedExternalAccountId = accountId }
        return HTTPServerResponse(status: 200)
    }
}
