import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleGooglePlay

/// Google Play: the Play Developer API (`google_play`), acknowledge or consume after every
/// delivery, real-time developer notifications on the listener (Pub/Sub push) worked before the
/// claims, and the voided purchases poll after the pass.
package struct GooglePlayAdapter: StoreAdapter {
    package var store: Store { .googlePlay }
    package var verifier: PlayVerifier
    package var finisher: (any StoreFinisher)?
    /// Real-time developer notifications, at `google_play.notifications_path` when configured.
    package var inbox: PlayNotificationInbox?
    package var notificationsPath: String?
    package var voided: PlayVoidedPoll?

    package init(verifier: PlayVerifier, finisher: PlayFinisher, inbox: PlayNotificationInbox? = nil, notificationsPath: String? = nil,
                 voided: PlayVoidedPoll? = nil) {
        self.verifier = verifier
        self.finisher = finisher
        self.inbox = inbox
        self.notificationsPath = notificationsPath
        self.voided = voided
    }

    package func verify(_ order: Order) throws -> Verification { try verifier.verify(order) }

    package func beforeClaims(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        try inbox?.processPending(work).outcome ?? .idle
    }

    package func afterPass(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        try voided?.pollIfDue(work) ?? .idle
    }

    package var listenerRoutes: [String: ListenerRoute] {
        guard let inbox, let notificationsPath else { return [:] }
        return [notificationsPath: { request in inbox.answer(request) }]
    }
}

extension PlayAPIError {
    /// What this failure says of Google as a whole, for its breaker: Google unavailable, settle's
    /// credentials refused, or (a refusal of this one request) Google answered.
    var sideWorkOutcome: SideWorkOutcome {
        switch kind {
        case .unavailable: .storeUnavailable(description, retryAfter: retryAfter)
        case .paced: .paced(message)
        case .configuration: .configurationFault(description)
        case .purchaseNotFound, .refused: .answered
        }
    }
}
