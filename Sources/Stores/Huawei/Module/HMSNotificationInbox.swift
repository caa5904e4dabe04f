import Foundation
import SettleBase
import SettleModel
import SettleHuawei
import SettleLedger
import SettleEngine

/// HMS IAP's server notifications (v2, huawei-appgallery.md 2.9) at `huawei.hms.notifications_path`.
///
/// An order notification is not signed, so it is only a hint, stored once (by the digest of its
/// body, having no id of its own) before Huawei is answered `{"errorCode": "0"}`: a purchase it
/// names is verified with Huawei (`tokens/verify`, whose answer is signed) before it becomes an
/// order, and a refund it names is taken back only once Huawei's cancelled purchases list shows it
/// (the poll is made due). A subscription notification's signature is checked; subscriptions are
/// not settled by this version, so it is only noted.
package struct HMSNotificationInbox: Sendable {
    package let ledger: any SettleLedger
    package let verifier: HMSVerifier
    package let binding: UserBinding
    package let log: Log

    package init(ledger: any SettleLedger, verifier: HMSVerifier, binding: UserBinding, log: Log) {
        (self.ledger, self.verifier, self.binding, self.log) = (ledger, verifier, binding, log)
    }

    package func answer(_ request: HTTPServerRequest) -> (response: HTTPServerResponse, needsPass: Bool) {
        func reply(_ status: Int, _ code: String) -> HTTPServerResponse {
            .json(status, JSONValue.object([("errorCode", .string(code))]).data)
        }
        guard request.body.count <= 64 * 1024, let body = try? JSONValue.parse(request.body), body.objectMembers != nil
        else {
            return (reply(400, "1"), false)
        }
        let type: String
        var purchaseToken: String?
        if let order = body["orderNotification"], order.objectMembers != nil {
            let kind = order["notificationType"]?.looseString
            type = kind == "1" ? "HMS_ORDER_PAID" : kind == "2" ? "HMS_ORDER_REFUNDED" : "HMS_ORDER_OTHER"
            purchaseToken = order["purchaseToken"]?.looseString
            // Unsigned: anyone can post one. Without a token and a product there is nothing to ask
            // Huawei about, so nothing is stored.
            guard let token = purchaseToken, PurchaseToken(token) != nil,
                order["productId"]?.looseString.map({ !$0.isEmpty }) == true
            else {
                return (reply(400, "1"), false)
            }
        } else if let sub = body["subNotification"] ?? (body["statusUpdateNotification"] != nil ? body : nil) {
            guard let data = sub["statusUpdateNotification"]?.looseString,
                let signature = (sub["notificationSignature"] ?? sub["notifycationSignature"])?.looseString,
                HMSProof.verify(
                    data: data, signature: signature, algorithm: sub["signatureAlgorithm"]?.looseString,
                    key: verifier.client.publicKey)
            else {
                log.warning(
                    "huawei.hms_notification_refused",
                    ["why": "a subscription notification whose signature does not verify"])
                return (reply(401, "2"), false)
            }
            type = "HMS_SUBSCRIPTION"
        } else {
            return (reply(400, "1"), false)
        }
        if let application = body["applicationId"]?.looseString, application != verifier.appId {
            return (reply(200, "0"), false)
        }
        // One row per purchase and kind (not per body): a stranger inventing bodies for one token
        // adds nothing, and each new token costs one question to Huawei (answered "no such purchase").
        let requestId =
            "hms:" + type + ":"
            + SHA256.hex(Data((purchaseToken ?? String(decoding: request.body, as: UTF8.self)).utf8))
        do {
            let fresh = try ledger.storeHuaweiNotification(
                HuaweiNotificationParts(
                    requestId: requestId, type: type, subtype: nil,
                    purchaseOrderId: nil, payload: body.serialized()),
                source: "endpoint")
            log.info(
                "huawei.hms_notification_stored",
                [
                    "type": type, "duplicate": !fresh,
                    "token": purchaseToken.flatMap(PurchaseToken.init)?.fingerprint,
                ])
            return (reply(200, "0"), fresh)
        } catch {
            log.error("huawei.hms_notification_not_stored", ["error": "\(error)"])
            return (reply(503, "1"), false)
        }
    }

    /// Works on the stored HMS notifications while `work` lasts.
    package func processPending(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let leaseSeconds = Int64(work.seconds.rounded(.up)) + HuaweiNotificationInbox.claimMarginSeconds
        var outcome = SideWorkOutcome.idle
        var waiting: [HuaweiNotificationRecord] = []
        var done = 0
        claiming: while done + waiting.count < HuaweiNotificationInbox.batch, !work.isSpent {
            let claimed = try ledger.claimHuaweiNotifications(
                limit: HuaweiNotificationInbox.claimBatch, leaseSeconds: leaseSeconds, hms: true)
            if claimed.isEmpty { break }
            for (index, record) in claimed.enumerated() {
                defer { work.progress() }
                switch try step(record) {
                case let .done(result, answered):
                    if answered { outcome = outcome.then(.answered) }
                    guard
                        try ledger.finishHuaweiNotification(
                            record, outcome: result.outcome, detail: result.detail,
                            orderId: result.orderId)
                    else { continue }
                    log.info(
                        "huawei.hms_notification",
                        ["type": record.type, "outcome": result.outcome, "order": result.orderId])
                    done += 1
                case let .storeFailed(failure):
                    outcome = outcome.then(HuaweiNotificationInbox.sideWorkOutcome(failure))
                    waiting += claimed[index...]
                    break claiming
                }
            }
        }
        try ledger.releaseHuaweiNotifications(waiting)
        return outcome
    }

    enum Step {
        case done(HuaweiNotificationInbox.Outcome, answered: Bool)
        case storeFailed(IAPKitClient.Failure)
    }

    private func step(_ record: HuaweiNotificationRecord) throws(LedgerError) -> Step {
        guard let body = try? JSONValue.parse(record.payload) else {
            return .done(("unreadable", nil, nil), answered: false)
        }
        let order = body["orderNotification"] ?? .null
        switch record.type {
        case "HMS_ORDER_REFUNDED":
            try ledger.makeHMSCancelledPollDue()
            return .done(
                (
                    "poll_due",
                    "an unsigned refund notification: applied once Huawei's cancelled purchases list shows it", nil
                ),
                answered: false)
        case "HMS_ORDER_PAID":
            guard let token = order["purchaseToken"]?.looseString, let product = order["productId"]?.looseString else {
                return .done(
                    ("unreadable", "a paid order notification without purchaseToken and productId", nil),
                    answered: false)
            }
            return try paid(HMSProof(purchaseToken: token, productId: product))
        case "HMS_SUBSCRIPTION":
            return .done(
                ("noted", "an HMS subscription notification: HMS subscriptions are not settled by this version", nil),
                answered: false)
        default:
            return .done(("noted", "nothing to deliver or take back", nil), answered: false)
        }
    }

    /// A paid order, verified with Huawei first: its order waiting for it is made due, or it becomes
    /// an order of its own, `huawei-hms-<orderId>`, for the user its developer payload names.
    private func paid(_ hinted: HMSProof) throws(LedgerError) -> Step {
        let answer: (data: String, signature: String, algorithm: String?)
        switch verifier.client.verifyToken(hinted) {
        case let .success(value): answer = value
        case let .failure(failure):
            switch failure.kind {
            case .notFound, .refused: return .done(("purchase_not_found", failure.message, nil), answered: true)
            default: return .storeFailed(failure)
            }
        }
        guard
            HMSProof.verify(
                data: answer.data, signature: answer.signature, algorithm: answer.algorithm,
                key: verifier.client.publicKey),
            let purchase = try? HMSPurchase(json: answer.data), let orderId = purchase.orderId
        else {
            return .done(
                (
                    "not_applied", "Huawei's answer does not verify with huawei.hms.public_key_file, or names no order",
                    nil
                ), answered: true)
        }
        guard purchase.purchaseState == 0 else {
            return .done(
                (
                    "not_purchased",
                    "HMS says the purchase has purchaseState \(purchase.purchaseState.map(String.init) ?? "absent")",
                    nil
                ),
                answered: true)
        }
        var proof = HMSProof(
            purchaseToken: purchase.purchaseToken, productId: purchase.productId, accountFlag: purchase.accountFlag)
        proof.orderId = orderId
        proof.subscriptionId = purchase.subscriptionId
        let placed = try ledger.place(
            ReportedPurchase(
                store: .huawei, key: orderId, productId: purchase.productId, proof: proof.storeProof,
                accountId: purchase.developerPayload, orderId: "huawei-hms-" + orderId, origin: "huawei_notification",
                reported: "HMS reported paid order \(orderId)"),
            binding: binding)
        if placed.outcome == "order_created" {
            log.warning("order.created_from_notification", ["order": placed.orderId, "store": Store.huawei.rawValue])
        }
        return .done(placed, answered: true)
    }
}
