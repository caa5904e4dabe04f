import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleHuawei
import SettleLedger
import SettleEngine

/// IAP Kit's key-event notifications (v3) on the notifications listener at
/// `huawei.notifications_path`, and the ones the history catch-up reads.
///
/// A notification is stored only once its JWS verified against the pinned root (Huawei asks
/// developers not to allow-list its addresses: the signature is the security), once by its
/// request id, before Huawei is answered 200; one that does not verify is refused and never
/// stored. The next pass works on it: a new transaction is read from Huawei (the notification
/// only says something changed) and goes to the order waiting for it, or becomes an order of its
/// own, `huawei-<purchaseOrderId>`, for the buyer its developer payload names (nobody: set aside
/// for `settle assign`); a revocation, signed by Huawei, takes the purchase back once.
package struct HuaweiNotificationInbox: Sendable {
    package let ledger: any SettleLedger
    package let verifier: IAPKitVerifier
    package let products: [String: Configuration.Product]
    package let binding: UserBinding
    package let log: Log
    package let metrics: Metrics?
    /// How refund reviews are answered (`huawei.refund_review`).
    package var refundReview = Configuration.HuaweiConfiguration.RefundReview()

    /// Notifications worked on in one pass at most; the rest wait for the next.
    static let batch = 200
    static let claimBatch = 16
    static let claimMarginSeconds: Int64 = 300

    package init(
        ledger: any SettleLedger, verifier: IAPKitVerifier, products: [String: Configuration.Product],
        binding: UserBinding,
        log: Log, metrics: Metrics?
    ) {
        (self.ledger, self.verifier, self.products, self.binding, self.log, self.metrics) = (
            ledger, verifier, products, binding, log, metrics
        )
    }

    /// The listener's answer to one POST, and whether a pass should run now.
    package func answer(_ request: HTTPServerRequest) -> (response: HTTPServerResponse, needsPass: Bool) {
        guard let body = try? JSONValue.parse(request.body), case let .string(jws)? = body["jwsNotification"] else {
            log.warning("huawei.notification_unreadable", ["why": "the body is not {\"jwsNotification\": ...}"])
            return (HTTPServerResponse.listenerReply(400, "unreadable: expected {\"jwsNotification\": ...}"), false)
        }
        switch admit(jws, source: "endpoint") {
        case let .refused(status, why):
            return (HTTPServerResponse.listenerReply(status, why), false)
        case let .stored(fresh):
            return (HTTPServerResponse.listenerReply(200, fresh ? "stored" : "duplicate"), fresh)
        }
    }

    enum Admission {
        case stored(fresh: Bool)
        case refused(status: Int, why: String)
    }

    /// Verifies and stores one signed notification (from the endpoint or the history).
    func admit(_ jws: String, source: String) -> Admission {
        let payload: JSONValue
        switch verifier.signedData.verify(jws, now: ledger.time.now) {
        case let .success(value): payload = value
        case let .failure(failure):
            log.warning("huawei.notification_refused", ["source": source, "why": failure.message])
            metrics?.observeNotification(type: "huawei", outcome: "refused_signature", at: nil)
            return .refused(status: 401, why: "refused: the signature does not verify")
        }
        let notification: HuaweiNotification
        do throws(HuaweiNotification.Invalid) {
            notification = try HuaweiNotification(json: payload)
        } catch {
            log.warning("huawei.notification_unreadable", ["source": source, "why": error.message])
            return .refused(status: 400, why: "unreadable: \(error.message)")
        }
        if let application = notification.applicationId, application != verifier.appId {
            log.warning("huawei.notification_other_application", ["application": String(application.prefix(64))])
            // Signed by Huawei, for another app: nothing of ours; answered so Huawei stops sending it.
            return .stored(fresh: false)
        }
        do {
            let fresh = try ledger.storeHuaweiNotification(
                HuaweiNotificationParts(
                    requestId: notification.requestId, type: notification.type, subtype: notification.subtype,
                    purchaseOrderId: notification.purchaseOrderId, payload: payload.serialized()), source: source)
            log.info(
                "huawei.notification_stored",
                [
                    "request": notification.requestId, "type": notification.type,
                    "source": source, "duplicate": !fresh,
                ])
            metrics?.observeNotification(
                type: "huawei_\(notification.type.lowercased())", outcome: fresh ? "stored" : "duplicate",
                at: fresh ? ledger.time.unixSeconds : nil)
            return .stored(fresh: fresh)
        } catch {
            log.error("huawei.notification_not_stored", ["request": notification.requestId, "error": "\(error)"])
            // Not stored: Huawei sends it again.
            return .refused(status: 503, why: "not stored")
        }
    }

    /// Works on the stored notifications while `work` lasts, each claimed by this host. At the
    /// first store-wide failure the rest wait, and the outcome says why, for Huawei's breaker.
    package func processPending(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let leaseSeconds = Int64(work.seconds.rounded(.up)) + Self.claimMarginSeconds
        var done = 0
        var outcome = SideWorkOutcome.idle
        var waiting: [HuaweiNotificationRecord] = []
        claiming: while done + waiting.count < Self.batch, !work.isSpent {
            let claimed = try ledger.claimHuaweiNotifications(limit: Self.claimBatch, leaseSeconds: leaseSeconds)
            if claimed.isEmpty { break }
            for (index, record) in claimed.enumerated() {
                guard !work.isSpent else {
                    waiting += claimed[index...]
                    break claiming
                }
                defer { work.progress() }
                switch try step(record) {
                case let .finished(result, answered):
                    if answered { outcome = outcome.then(.answered) }
                    guard
                        try ledger.finishHuaweiNotification(
                            record, outcome: result.outcome, detail: result.detail,
                            orderId: result.orderId)
                    else { continue }
                    log.info(
                        "huawei.notification",
                        [
                            "request": record.requestId, "type": record.type, "outcome": result.outcome,
                            "order": result.orderId,
                        ])
                    done += 1
                case .waiting:
                    waiting.append(record)
                case let .storeFailed(failure):
                    log.warning(
                        "huawei.notifications_deferred",
                        [
                            "error": failure.message,
                            "left": claimed.count - index + waiting.count,
                        ])
                    outcome = outcome.then(Self.sideWorkOutcome(failure))
                    waiting += claimed[index...]
                    break claiming
                }
            }
        }
        try ledger.releaseHuaweiNotifications(waiting)
        return outcome
    }

    static func sideWorkOutcome(_ failure: IAPKitClient.Failure) -> SideWorkOutcome {
        switch failure.kind {
        case .configuration: .configurationFault(failure.message)
        case .paced: .paced(failure.message)
        default: .storeUnavailable(failure.message, retryAfter: failure.retryAfter)
        }
    }

    typealias Outcome = (outcome: String, detail: String?, orderId: String?)

    enum Step {
        case finished(Outcome, answered: Bool)
        /// Looked at again at the next pass (an order it depends on is still being settled).
        case waiting
        /// Huawei as a whole failed: nothing more is asked of it this pass.
        case storeFailed(IAPKitClient.Failure)
    }

    private func step(_ record: HuaweiNotificationRecord) throws(LedgerError) -> Step {
        guard let json = try? JSONValue.parse(record.payload), let notification = try? HuaweiNotification(json: json)
        else {
            return .finished(("unreadable", nil, nil), answered: false)
        }
        do throws(LedgerError) {
            if notification.isRevocation { return .finished(try revoked(notification), answered: false) }
            if notification.isNewTransaction { return try purchase(notification) }
            if notification.type == "REFUND_REQUEST" { return try refundRequest(json, record: record) }
            return .finished(("noted", Self.noted(notification), nil), answered: false)
        } catch {
            guard let violation = error.constraintViolation else { throw error }
            return .finished(
                ("not_applied", "a ledger write for this notification failed: \(violation); a person looks", nil),
                answered: false)
        }
    }

    private static func noted(_ n: HuaweiNotification) -> String {
        let what = n.type + (n.subtype.map { " (\($0))" } ?? "")
        switch n.type {
        case "TEST":
            return "a test notification"
        default:
            return "\(what): nothing to deliver or take back"
        }
    }

    /// Huawei signed that it took the purchase back: each order holding it revokes it once.
    private func revoked(_ n: HuaweiNotification) throws(LedgerError) -> Outcome {
        guard let purchaseOrderId = n.purchaseOrderId else {
            return ("unreadable", "a revocation that names no purchaseOrderId", nil)
        }
        let why = "Huawei revoked purchase order \(purchaseOrderId)" + (n.subtype.map { " (\($0))" } ?? "")
        let outcomes = try ledger.applyStoreRefund(
            store: .huawei, grantKey: purchaseOrderId, kind: "REVOKE", reason: n.subtype,
            why: why, source: "Huawei notification \(n.requestId)")
        return (
            outcomes.isEmpty ? "no_order" : "revoked",
            outcomes.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", "),
            outcomes.keys.sorted().first
        )
    }

    /// A new transaction, read from Huawei first: what Huawei signs decides whose it is.
    private func purchase(_ n: HuaweiNotification) throws(LedgerError) -> Step {
        guard let purchaseOrderId = n.purchaseOrderId, let token = n.purchaseToken else {
            return .finished(
                ("unreadable", "a new transaction without its purchaseOrderId and purchaseToken", nil), answered: false)
        }
        let proof = HuaweiProof(purchaseOrderId: purchaseOrderId, purchaseToken: token)
        let purchase: HuaweiPurchaseOrder
        switch verifier.purchaseOrder(proof, subscription: n.isSubscription) {
        case let .success(found): purchase = found
        case let .failure(.store(failure)):
            switch failure.kind {
            case .notFound, .refused: return .finished(("purchase_not_found", failure.message, nil), answered: true)
            default: return .storeFailed(failure)
            }
        case let .failure(.untrusted(why)):
            return .finished(("not_applied", why, nil), answered: true)
        }
        let placed = try ledger.place(
            ReportedPurchase(
                store: .huawei, key: purchaseOrderId, productId: purchase.productId, proof: proof.storeProof,
                accountId: purchase.developerPayload, orderId: "huawei-" + purchaseOrderId,
                origin: "huawei_notification",
                reported: "Huawei reported purchase order \(purchaseOrderId) (\(n.subtype ?? n.type))"),
            binding: binding)
        if placed.outcome == "order_created" {
            log.warning("order.created_from_notification", ["order": placed.orderId, "store": Store.huawei.rawValue])
        }
        return .finished(placed, answered: true)
    }
}
