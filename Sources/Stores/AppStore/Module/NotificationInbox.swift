import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleLedger
import SettleEngine
import SettleDelivery

/// Where App Store Server Notifications come in, from the endpoint or from Get Notification
/// History: verified, stored once by UUID with their effect on orders, then answered. Also does
/// the work they leave (refund-request answers) and the history catch-up.
package final class NotificationInbox: Sendable {
    package let ledger: any SettleLedger
    package let verifier: SignedDataVerifier
    package let rules: NotificationRules
    /// The Server API, for history and consumption answers (nil without `server_api`).
    package let api: AppStoreServerClient?
    package let consumption: Configuration.ConsumptionConfiguration
    package let acceptSandbox: Bool
    /// `notifications.backfill_since` (ms): where the first history catch-up starts; nil: at the first start.
    package let backfillSinceMs: Int64?
    package let policy: RetryPolicy
    package let log: Log
    package let metrics: Metrics?

    package init(ledger: any SettleLedger, verifier: SignedDataVerifier, rules: NotificationRules, api: AppStoreServerClient?,
                consumption: Configuration.ConsumptionConfiguration, acceptSandbox: Bool,
                policy: RetryPolicy, log: Log, metrics: Metrics?, backfillSinceMs: Int64? = nil) {
        self.backfillSinceMs = backfillSinceMs
        self.ledger = ledger
        self.verifier = verifier
        self.rules = rules
        self.api = api
        self.consumption = consumption
        self.acceptSandbox = acceptSandbox
        self.policy = policy
        self.log = log
        self.metrics = metrics
    }

    /// What receiving one `signedPayload` came to.
    package enum Receipt: Sendable, Equatable {
        case stored(IngestResult)
        /// Not a notification for this app (forged, another app, an environment not accepted).
        case refused(SignedDataFailure)
        /// Verified but not stored: the ledger failed. Apple must send it again.
        case notStored(String)
    }

    /// Verifies and stores one notification. Returns only once the row is durable (or not stored).
    package func receive(signedPayload: String, source: String) -> Receipt {
        switch verifier.verifyNotification(signedPayload, now: ledger.time.now) {
        case let .failure(failure):
            metrics?.observeNotification(type: "unverified", outcome: failure.code, at: nil)
            log.warning("notification.refused", ["source": source, "reason": failure.code, "detail": "\(failure)"])
            return .refused(failure)
        case let .success(notification):
            if let unreadable = notification.unreadable { return keepUnapplied(notification, source: source, error: unreadable) }
            do {
                let result = try ledger.ingest(notification, source: source, rules: rules)
                metrics?.observeNotification(type: notification.type, outcome: result.outcome,
                                             at: result.duplicate ? nil : ledger.time.unixSeconds)
                if !result.duplicate {
                    log.info("notification.stored", ["uuid": notification.uuid, "type": notification.type, "subtype": notification.subtype,
                                                      "environment": notification.environment, "source": source,
                                                      "transaction": notification.transaction?.transactionId, "order": result.orderId,
                                                      "outcome": result.outcome])
                }
                return .stored(result)
            } catch {
                // From the endpoint, a 5xx makes Apple send it again (and history has it later).
                // From history, nobody sends it again: kept without its effect, for a person, so
                // one notification the ledger cannot apply never blocks the catch-up for ever.
                guard source == "history" else {
                    log.error("notification.not_stored", ["uuid": notification.uuid, "error": "\(error)"])
                    return .notStored("\(error)")
                }
                return keepUnapplied(notification, source: source, error: "\(error)")
            }
        }
    }

    /// Keeps a verified notification without its effect, for a person: answered as stored, so
    /// neither Apple's retries nor the history catch-up stall on it.
    private func keepUnapplied(_ notification: AppleNotification, source: String, error: String) -> Receipt {
        do {
            try ledger.recordUnapplied(notification, source: source, error: error)
        } catch let second {
            log.error("notification.not_stored", ["uuid": notification.uuid, "error": error, "then": "\(second)"])
            return .notStored("\(second)")
        }
        metrics?.observeNotification(type: notification.type, outcome: "not_applied", at: ledger.time.unixSeconds)
        log.error("notification.not_applied", ["uuid": notification.uuid, "type": notification.type, "source": source,
                                               "transaction": notification.transaction?.transactionId, "error": error,
                                               "action": "settle status --notification \(notification.uuid); apply it by hand"])
        return .stored(IngestResult(outcome: "not_applied", orderId: nil, detail: error, duplicate: false, needsPass: false))
    }

    /// The endpoint's answer to one request body (`{"signedPayload": "..."}`): 200 only once
    /// the notification is durable, 5xx when it is not (Apple retries), 4xx for what is not ours.
    package func answer(_ body: Data) -> (response: HTTPServerResponse, needsPass: Bool) {
        guard let json = try? JSONValue.parse(body), case let .string(signed)? = json["signedPayload"] else {
            log.warning("notifications.bad_request", ["status": 400, "why": "body is not JSON with a signedPayload string",
                                                      "bytes": body.count])
            metrics?.observeNotification(type: "unverified", outcome: "body_invalid", at: nil)
            return (HTTPServerResponse.listenerReply(400, "body is not JSON with a signedPayload string"), false)
        }
        switch receive(signedPayload: signed, source: "endpoint") {
        case let .stored(result): return (HTTPServerResponse.listenerReply(200, result.outcome), result.needsPass)
        case let .refused(failure):
            let status = failure.code == "jws_malformed" || failure.code == "payload_invalid" ? 400 : 403
            return (HTTPServerResponse.listenerReply(status, failure.code), false)
        case .notStored: return (HTTPServerResponse.listenerReply(503, "not stored; send it again"), false)
        }
    }

}
