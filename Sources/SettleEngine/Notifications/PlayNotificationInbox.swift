import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleGooglePlay
import SettleLedger

/// Google Play's real-time developer notifications (Cloud Pub/Sub push) on the notifications
/// listener at `google_play.notifications_path`.
///
/// A push is answered only after it is stored, once by message id (a 2xx tells Pub/Sub it may
/// forget it): the `Authorization: Bearer` OIDC token must verify against the configured JWKS
/// for the configured audience and push service account, else 401/403 and nothing is stored.
/// The work waits for the next pass (`processPending`), which reads the purchase from Google (a
/// notification only says that something changed): a one-time or subscription purchase nobody
/// enqueued becomes an order `play-<Google order id>` for the user its obfuscated account id maps
/// to (or, with nobody known, `needs_attention` as `unclaimed_purchase` for `settle assign`); a
/// voided purchase is applied as the voided purchases poll applies it.
package struct PlayNotificationInbox: Sendable {
    package let ledger: any SettleLedger
    package let authenticator: PushAuthenticator
    package let packageName: String
    package let client: PlayDeveloperClient
    package let products: [String: Configuration.Product]
    package let binding: UserBinding
    package let log: Log
    package let metrics: Metrics?

    /// Notifications worked on in one pass at most; the rest wait for the next.
    package static let batch = 200

    package init(ledger: any SettleLedger, authenticator: PushAuthenticator, packageName: String, client: PlayDeveloperClient,
                products: [String: Configuration.Product], binding: UserBinding, log: Log, metrics: Metrics?) {
        self.ledger = ledger
        self.authenticator = authenticator
        self.packageName = packageName
        self.client = client
        self.products = products
        self.binding = binding
        self.log = log
        self.metrics = metrics
    }

    /// The listener's answer to one push, and whether a pass should run now.
    package func answer(_ request: HTTPServerRequest) -> (response: HTTPServerResponse, needsPass: Bool) {
        if case let .failure(refusal) = authenticator.authenticate(authorization: request.header("Authorization")) {
            log.warning("google_play.push_refused", ["why": refusal.rawValue])
            metrics?.observeNotification(type: "google_play_push", outcome: "refused_\(refusal.rawValue)", at: nil)
            return (NotificationInbox.reply(refusal == .missingToken ? 401 : 403, "refused: \(refusal.rawValue)"), false)
        }
        let push: PubSubPush
        do {
            push = try PubSubPush(body: request.body)
        } catch {
            log.warning("google_play.push_unreadable", ["why": error.rawValue])
            return (NotificationInbox.reply(400, "unreadable: \(error.rawValue)"), false)
        }
        let (kind, token) = Self.describe(push.notification)
        do {
            let stored = try ledger.storePlayNotification(messageId: push.messageId, kind: kind, token: token,
                                                          payload: String(decoding: push.data, as: UTF8.self))
            log.info("google_play.push_stored", ["message": push.messageId, "kind": kind, "duplicate": !stored])
            metrics?.observeNotification(type: "google_play_\(kind)", outcome: stored ? "stored" : "duplicate",
                                         at: stored ? ledger.time.unixSeconds : nil)
            return (NotificationInbox.reply(200, stored ? "stored" : "duplicate"), stored)
        } catch {
            log.error("google_play.push_not_stored", ["message": push.messageId, "error": "\(error)"])
            // Not stored: Pub/Sub keeps it and delivers it again.
            return (NotificationInbox.reply(503, "not stored"), false)
        }
    }

    package static func describe(_ notification: DeveloperNotification) -> (String, PlayPurchaseToken?) {
        switch notification.kind {
        case let .oneTimeProduct(n): return ("one_time_product", n.purchaseToken)
        case let .subscription(n): return ("subscription", n.purchaseToken)
        case let .voidedPurchase(n): return ("voided_purchase", n.purchaseToken)
        case .test: return ("test", nil)
        case .unknown: return ("unknown", nil)
        }
    }

    /// Works on the stored notifications; one whose purchase Google cannot be asked about now
    /// stays pending for the next pass. Returns how many were finished.
    @discardableResult
    package func processPending() throws(LedgerError) -> Int {
        var done = 0
        for record in try ledger.pendingPlayNotifications(limit: Self.batch) {
            guard let json = try? JSONValue.parse(Data(record.payload.utf8)),
                  let notification = try? DeveloperNotification(json: json) else {
                try ledger.finishPlayNotification(messageId: record.messageId, outcome: "unreadable", detail: nil, orderId: nil)
                continue
            }
            if let other = notification.packageName, other != packageName {
                try ledger.finishPlayNotification(messageId: record.messageId, outcome: "other_package",
                                                  detail: "for \(other), not \(packageName)", orderId: nil)
                continue
            }
            let result: (outcome: String, detail: String?, orderId: String?)?
            switch notification.kind {
            case let .oneTimeProduct(n):
                result = try purchase(token: n.purchaseToken, productId: n.sku, subscription: false,
                                      purchased: n.notificationType == .purchased)
            case let .subscription(n):
                let renewed = [.renewed, .recovered, .restarted].contains(n.notificationType)
                result = try purchase(token: n.purchaseToken, productId: n.subscriptionId, subscription: true,
                                      purchased: renewed || n.notificationType == .purchased, renewal: renewed)
            case let .voidedPurchase(n):
                let outcomes = try ledger.applyPlayVoided(token: n.purchaseToken, googleOrderId: n.orderId,
                                                          reason: n.rawRefundType.map { "refundType \($0)" }, source: "real-time notification")
                result = (outcomes.isEmpty ? "no_order" : "voided", outcomes.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", "),
                          outcomes.keys.sorted().first)
            case .test:
                result = ("test", "a test notification from Play Console", nil)
            case let .unknown(fields):
                result = ("unknown_kind", fields.joined(separator: ", "), nil)
            }
            guard let result else { continue }
            try ledger.finishPlayNotification(messageId: record.messageId, outcome: result.outcome, detail: result.detail,
                                              orderId: result.orderId)
            log.info("google_play.notification", ["message": record.messageId, "kind": record.kind, "outcome": result.outcome,
                                                  "order": result.orderId])
            done += 1
        }
        return done
    }

    /// A purchase Google told of: nothing when an order holds its token (the pass verifies that
    /// order), else a new order when Google confirms it was bought. Nil: ask again next pass.
    private func purchase(token: PlayPurchaseToken, productId: String?, subscription: Bool, purchased: Bool,
                          renewal: Bool = false) throws(LedgerError) -> (outcome: String, detail: String?, orderId: String?)? {
        if let existing = try ledger.playOrderIds(token: token).first {
            // Its order may be waiting for a pending payment: Google says something changed, so ask now.
            if purchased { try ledger.makeDue(orderId: existing) }
            // A renewal is a new order of Google's under the same token: granted as its own order.
            if renewal, let productId { return try renewalOrder(token: token, productId: productId, existing: existing) }
            return ("order_exists", nil, existing)
        }
        guard purchased else { return ("noted", "nothing to deliver for this notification type", nil) }
        guard let productId, let product = products[productId], product.stores.contains(.googlePlay) else {
            return ("unknown_product", "product \(productId ?? "?") is not a google_play product in the configuration", nil)
        }
        let facts: PlayPurchaseFacts
        do {
            facts = subscription ? PlayPurchaseFacts(subscription: try client.subscriptionPurchase(token: token))
                                 : PlayPurchaseFacts(product: try client.productPurchase(productId: productId, token: token), productId: productId)
        } catch {
            if error.kind == .purchaseNotFound { return ("purchase_not_found", error.message, nil) }
            log.warning("google_play.notification_deferred", ["error": error.description])
            return nil
        }
        guard facts.state == .purchased || facts.state == .pending, let googleOrderId = facts.orderId else {
            return ("not_purchased", "Google says the purchase is not (or no longer) bought", nil)
        }
        let user = try facts.accountId.flatMap { (id) throws(LedgerError) in try userFor(accountId: id) } ?? ""
        let orderId = PlayOrderId.prefix + googleOrderId
        let detail = "Google Play reported purchase \(googleOrderId) (\(token.fingerprint)) that no backend enqueued"
            + (user.isEmpty ? "; nothing maps it to a user" : "; its obfuscatedExternalAccountId maps to user \(user)")
        guard try ledger.createPlayOrder(orderId: orderId, userId: user, productId: productId, token: token, accountId: facts.accountId,
                                         detail: detail) else {
            // A row under that id exists without this token (a backend wrote it): it is not this purchase's order.
            return ("order_id_taken", "order \(orderId) exists and does not hold this purchase token; a person looks", orderId)
        }
        log.warning("order.created_from_notification", ["order": orderId, "store": Store.googlePlay.rawValue, "user": user.isEmpty ? nil : user])
        return ("order_created", detail, orderId)
    }

    /// A subscription Google renewed (or recovered, or restarted) under a token an order already
    /// holds: Google's latest order id is a purchase of its own, delivered once (its grant key)
    /// to the user of the order that holds the token, as an App Store renewal is. Nothing when an
    /// order already holds that purchase. Nil: ask Google again next pass.
    private func renewalOrder(token: PlayPurchaseToken, productId: String,
                              existing: String) throws(LedgerError) -> (outcome: String, detail: String?, orderId: String?)? {
        guard let product = products[productId], product.stores.contains(.googlePlay) else {
            return ("unknown_product", "product \(productId) is not a google_play product in the configuration", nil)
        }
        let facts: PlayPurchaseFacts
        do {
            facts = PlayPurchaseFacts(subscription: try client.subscriptionPurchase(token: token))
        } catch {
            if error.kind == .purchaseNotFound { return ("purchase_not_found", error.message, nil) }
            log.warning("google_play.notification_deferred", ["error": error.description])
            return nil
        }
        guard facts.state == .purchased, let latest = facts.orderId else {
            return ("not_purchased", "Google says the subscription is not active", existing)
        }
        let orderId = PlayOrderId.prefix + latest
        let held = try ledger.grantHolder(transactionId: latest) != nil
        let ordered = try ledger.orderRecord(orderId) != nil
        if held || ordered {
            return ("order_exists", "renewal \(latest) is already an order's", existing)
        }
        guard let holder = try ledger.orderRecord(existing)?.order, !holder.userId.isEmpty else {
            return ("noted", "the order holding this subscription has no user yet; renewals follow once it is assigned", existing)
        }
        let detail = "Google Play renewed the subscription of order \(existing) (\(token.fingerprint)): purchase \(latest)"
        guard try ledger.createPlayOrder(orderId: orderId, userId: holder.userId, productId: productId, token: token,
                                         accountId: facts.accountId, detail: detail) else {
            return ("order_id_taken", "order \(orderId) exists and does not hold this purchase token; a person looks", orderId)
        }
        log.info("order.created_from_notification", ["order": orderId, "store": Store.googlePlay.rawValue, "renewal_of": existing])
        return ("renewal_order_created", detail, orderId)
    }

    /// The user an obfuscated account id stands for: the id itself when user ids are the account
    /// ids (`user_binding.app_account_token: user_id`), else the one user whose orders carry it.
    /// A version-5 UUID cannot be turned back into its user id.
    private func userFor(accountId: String) throws(LedgerError) -> String? {
        switch binding.tokenSource {
        case .userId: return accountId
        case .order: return try ledger.playUser(accountId: accountId)
        case .uuid5: return nil
        }
    }
}
