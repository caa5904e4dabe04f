import Foundation
import SettleBase
import SettleModel

/// The contexts Google added to `SubscriptionPurchaseV2` after settle first read it: the expired
/// subscription a resubscription made in the Play Store follows (2025-11-19), and the declined
/// renewal behind an account hold or a grace period (2026-05-19).
/// https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.subscriptionsv2#OutOfAppPurchaseContext
/// https://developer.android.com/google/play/billing/play-developer-apis-release-notes
extension SubscriptionPurchaseV2 {
    /// `outOfAppPurchaseContext`: a purchase made outside the app (a resubscription from the Play
    /// Store) names the last expired subscription of the same product. Google: the token "must
    /// only be used to help identify the user if the link between the purchaseToken and user is
    /// stored in your database" — settle's ledger is that link, or there is none.
    package struct OutOfAppPurchase: Sendable, Equatable {
        /// The expired subscription's purchase token: a bearer secret like any other.
        package var expiredPurchaseToken: PurchaseToken?
        /// `expiredExternalAccountIdentifiers.obfuscatedExternalAccountId`: the account id the
        /// expired subscription carried. Evidence only where the binding rules make it a user's.
        package var expiredAccountId: String?

        package init(expiredPurchaseToken: PurchaseToken?, expiredAccountId: String? = nil) {
            self.expiredPurchaseToken = expiredPurchaseToken
            self.expiredAccountId = expiredAccountId
        }
    }

    /// `onHoldStateContext` / `inGracePeriodStateContext`: the renewal whose payment was declined
    /// (`renewalDeclined.pendingOrderId`), which Google keeps retrying. Present only in that state.
    package struct DeclinedRenewal: Sendable, Equatable {
        /// The pending or failed order Google retries; nil when Google sent the context without one.
        package var pendingOrderId: String?

        package init(pendingOrderId: String?) {
            self.pendingOrderId = pendingOrderId
        }
    }

    static func outOfAppPurchase(_ json: JSONValue?) -> OutOfAppPurchase? {
        guard let json, json.objectMembers != nil else { return nil }
        let token = text(json["expiredPurchaseToken"]).flatMap(PurchaseToken.init)
        let account = text(json["expiredExternalAccountIdentifiers"]?["obfuscatedExternalAccountId"])
        return OutOfAppPurchase(expiredPurchaseToken: token, expiredAccountId: account)
    }

    static func declinedRenewal(_ json: JSONValue?) -> DeclinedRenewal? {
        guard let json, json.objectMembers != nil else { return nil }
        let pending = text(json["renewalDeclined"]?["pendingOrderId"]).map { String($0.prefix(128)) }
        return DeclinedRenewal(pendingOrderId: pending)
    }

    private static func text(_ value: JSONValue?) -> String? {
        guard case let .string(text)? = value, !text.isEmpty else { return nil }
        return text
    }

    /// The contexts as Google sends them (for the fake Google).
    var contextMembers: [(String, JSONValue)] {
        var members: [(String, JSONValue)] = []
        if let outOfApp = outOfAppPurchase {
            var fields: [(String, JSONValue)] = []
            if let token = outOfApp.expiredPurchaseToken {
                fields.append(("expiredPurchaseToken", .string(token.value)))
            }
            if let account = outOfApp.expiredAccountId {
                let ids = JSONValue.object([("obfuscatedExternalAccountId", .string(account))])
                fields.append(("expiredExternalAccountIdentifiers", ids))
            }
            members.append(("outOfAppPurchaseContext", .object(fields)))
        }
        for (key, context) in [("onHoldStateContext", onHold), ("inGracePeriodStateContext", inGracePeriod)] {
            guard let context else { continue }
            let declined: [(String, JSONValue)] = context.pendingOrderId.map { [("pendingOrderId", .string($0))] } ?? []
            members.append((key, .object([("renewalDeclined", .object(declined))])))
        }
        return members
    }

    /// What Google says happens next with a subscription on hold or in its grace period, in
    /// words for an order's history and status; nil in any other state.
    package var holdContext: String? {
        switch subscriptionState {
        case .onHold?:
            guard let onHold else { return nil }
            return "on hold (account hold): the payment of renewal "
                + (onHold.pendingOrderId.map { "order \($0)" } ?? "(order not named)")
                + " was declined and Google keeps retrying it; access is suspended until it is paid"
        case .inGracePeriod?:
            // Read as a time and written anew: Google's text is never passed on as it came.
            let end = lineItems.compactMap(\.expiry).max()
            let until = end.map { " until " + ISO8601DateFormatter().string(from: $0) } ?? ""
            return "in its grace period\(until): the payment of renewal "
                + (inGracePeriod?.pendingOrderId.map { "order \($0)" } ?? "(order not named)")
                + " was declined and Google keeps retrying it; the customer keeps access meanwhile"
        default:
            return nil
        }
    }
}
