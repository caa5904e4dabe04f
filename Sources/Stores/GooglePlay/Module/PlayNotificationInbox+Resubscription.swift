import SettleBase
import SettleModel
import SettleLedger
import SettleGooglePlay

/// A resubscription made in the Play Store, outside the app: Google's `outOfAppPurchaseContext`
/// names the expired subscription it follows (`expiredPurchaseToken`). Google says to use that
/// token only to find the user where the link between token and user is stored; settle's ledger
/// is that link. The evidence is the ledger's grant of the expired token, and nothing less.
extension PlayNotificationInbox {
    /// Whose resubscription it is, by the expired subscription's grants.
    enum Resubscriber {
        /// The user of the expired grant (`holder`), with the evidence in words.
        case user(Order, String)
        /// The ledger holds the expired subscription but cannot vouch for one user: why.
        case refused(String)
        /// The ledger knows nothing of it (no context, no token, no grant of it).
        case unknown
    }

    /// The user a resubscription goes to: the one user the ledger granted the expired token to,
    /// under a verified binding (`bound`). Never when more than one user holds grants of it, when
    /// one of its orders was refunded (the customer got the money back: a resubscription is no
    /// proof of who they are), or when one was transferred to another user (whose is it then?):
    /// those stay `unclaimed_purchase` and the history says why, for `settle assign`.
    func resubscriber(_ context: SubscriptionPurchaseV2.OutOfAppPurchase?,
                      bound: (Order) -> Bool) throws(LedgerError) -> Resubscriber {
        guard let expired = context?.expiredPurchaseToken else { return .unknown }
        let grants = try ledger.playGrants(token: expired)
        guard !grants.isEmpty else { return .unknown }
        let named = "the expired subscription it follows "
            + "(outOfAppPurchaseContext.expiredPurchaseToken, \(expired.fingerprint))"
        let users = Set(grants.map(\.userId)).sorted()
        if users.count > 1 {
            return .refused("\(named) was granted to more than one user (\(users.joined(separator: ", "))): "
                            + "settle cannot say whose the resubscription is")
        }
        if let refunded = grants.first(where: { $0.refund != nil }) {
            return .refused("\(named) is order \(refunded.orderId), which was refunded: "
                            + "its user is not bound to the resubscription")
        }
        for grant in grants
        where try ledger.supportActions(orderId: grant.orderId).contains(where: { $0.kind == .transfer }) {
            return .refused("\(named) is order \(grant.orderId), which support transferred to another user: "
                            + "settle cannot say whose the resubscription is")
        }
        guard let holder = grants.first(where: bound) else {
            return .refused("\(named) is order \(grants[0].orderId), to which user_binding does not bind the resubscription "
                            + "(its account id is another, or it carries none and tokenless_signed_proofs is not trust)")
        }
        return .user(holder, "\(named) was granted to user \(holder.userId) by order \(holder.orderId); for that user")
    }

    /// The buyer of a purchase no grant ties to a user, by account ids alone: its own
    /// obfuscatedExternalAccountId, else the expired subscription's it follows, each only where
    /// the binding rules make the id a user's (`userFor`); with the words that say so, or why not.
    func buyer(_ read: Read, accountId: String?, bound: (Order) -> Bool) throws(LedgerError) -> (String, String) {
        if let accountId, let user = try userFor(accountId: accountId) {
            return (user, "; its obfuscatedExternalAccountId maps to user \(user)")
        }
        var detail = ""
        if case let .refused(why) = try resubscriber(read.outOfApp, bound: bound) { detail += "; " + why }
        if let expired = read.outOfApp?.expiredAccountId,
           let owner = try userFor(accountId: PlayVerifier.normalized(expired)) {
            let shown = PrintableText.escape(String(expired.prefix(128)))
            return (owner, detail + "; the expired subscription it follows carried obfuscatedExternalAccountId "
                    + "\(shown), which the binding rules make user \(owner)'s "
                    + "(outOfAppPurchaseContext.expiredExternalAccountIdentifiers)")
        }
        return ("", detail + "; nothing maps it to a user")
    }
}
