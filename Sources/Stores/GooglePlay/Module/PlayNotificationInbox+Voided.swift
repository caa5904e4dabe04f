import SettleBase
import SettleModel
import SettleGooglePlay
import SettleLedger
import SettleEngine

/// Voided purchase pushes: applied only once Google itself confirms them.
extension PlayNotificationInbox {
    /// How long a voided purchase push waits for Google's voided purchases list to show it.
    package static let voidedConfirmationSeconds: Int64 = 3600

    /// A voided purchase push proves only that Pub/Sub delivered it: it is applied once
    /// Google's voided purchases list shows that order voided (with its quantity), read around
    /// the push's time. Not shown yet: asked again at the next passes, for an hour; then left to
    /// the voided purchases poll, which applies whatever Google lists.
    func voided(_ n: VoidedPurchaseNotification, record: PlayNotificationRecord, eventMs: Int64?,
                work: SideWork) throws(LedgerError) -> Step {
        let now = ledger.time.unixSeconds
        let name = n.orderId ?? n.purchaseToken.fingerprint
        // Saturating: the times are checked before (`timeRefusal`), and a check missed must not trap.
        let pushed = eventMs ?? record.receivedAt.saturatingMultiplied(by: 1000)
        let since = max(now * 1000 - PlayVoidedPoll.lookBackMs,
                        pushed.saturatingSubtracting(Self.voidedConfirmationSeconds * 1000))
        let age = now.saturatingSubtracting(record.receivedAt)
        let search: PlayVoidedPoll.Search
        do throws(PlayAPIError) {
            search = try PlayVoidedPoll.find(orderId: n.orderId, token: n.purchaseToken, since: since, client: client, work: work)
        } catch {
            guard age < Self.voidedConfirmationSeconds * 24 else {
                return .finished(("not_confirmed", "Google could not be asked to confirm voided purchase \(name) for a day; "
                                    + "nothing was revoked", nil), answered: false)
            }
            if error.isStoreWide { return .storeFailed(error) }
            log.warning("google_play.notification_deferred", ["error": error.description])
            return .waiting(answered: true)
        }
        let voided: VoidedPurchase
        switch search {
        case let .found(entry):
            voided = entry
        case .unfinished:
            return .waiting(answered: true)
        case .notListed:
            guard age >= Self.voidedConfirmationSeconds else { return .waiting(answered: true) }
            return .finished(("not_confirmed", "Google's voided purchases list does not show purchase \(name): nothing was revoked "
                                + "(the voided purchases poll applies it if Google lists it later)", nil), answered: true)
        }
        let outcomes = try ledger.applyPlayVoided(token: voided.purchaseToken, googleOrderId: voided.orderId, quantity: voided.voidedQuantity,
                                                  voidedTimeMs: voided.voidedTimeMillis,
                                                  reason: voided.rawVoidedReason.map(String.init), source: "real-time notification")
        return .finished((outcomes.isEmpty ? "no_order" : "voided", outcomes.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", "),
                          outcomes.keys.sorted().first), answered: true)
    }
}
