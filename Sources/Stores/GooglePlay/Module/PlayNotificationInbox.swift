import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleGooglePlay
import SettleLedger
import SettleEngine

extension Order {
    /// Not settled yet: an order that may still take a purchase.
    fileprivate var isLive: Bool { state == .pending || state == .verifying || state == .delivering || state == .needsAttention }
}

/// Google Play's real-time developer notifications (Cloud Pub/Sub push) on the notifications
/// listener at `google_play.notifications_path`.
///
/// A push is answered only after it is stored, once by message id (a 2xx tells Pub/Sub it may
/// forget it): the `Authorization: Bearer` OIDC token must verify against the configured JWKS
/// for the configured audience and push service account, else 401/403 and nothing is stored.
/// The work waits for the next pass (`processPending`), which reads the purchase from Google (a
/// notification only says that something changed): a purchase no live order of its buyer holds
/// becomes an order `play-<Google order id>` for its buyer (see `purchase`); a voided purchase,
/// once Google's voided purchases list confirms it, is applied as the voided purchases poll
/// applies it.
package struct PlayNotificationInbox: Sendable {
    package let ledger: any SettleLedger
    package let authenticator: PushAuthenticator
    package let packageName: String
    package let client: PlayDeveloperClient
    package let products: [String: Configuration.Product]
    package let binding: UserBinding
    package let log: Log
    package let metrics: Metrics?
    /// How pending refund reviews are answered (`google_play.refund_review`).
    package var refundReview = Configuration.GooglePlayConfiguration.RefundReview()

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
            if refusal == .unknownKey { metrics?.family(PushKeyMetrics.self).observeUnknownKey() }
            // Keys that cannot be read now are settle's trouble: Pub/Sub delivers the push again.
            let status = refusal == .missingToken ? 401 : refusal == .keysUnavailable ? 503 : 403
            return (HTTPServerResponse.listenerReply(status, "refused: \(refusal.rawValue)"), false)
        }
        let push: PubSubPush
        do {
            push = try PubSubPush(body: request.body)
        } catch {
            log.warning("google_play.push_unreadable", ["why": error.rawValue])
            return (HTTPServerResponse.listenerReply(400, "unreadable: \(error.rawValue)"), false)
        }
        let (kind, token) = Self.describe(push.notification)
        do {
            let stored = try ledger.storePlayNotification(messageId: push.messageId, kind: kind, token: token,
                                                          payload: String(decoding: push.data, as: UTF8.self))
            log.info("google_play.push_stored", ["message": push.messageId, "kind": kind, "duplicate": !stored])
            metrics?.observeNotification(type: "google_play_\(kind)", outcome: stored ? "stored" : "duplicate",
                                         at: stored ? ledger.time.unixSeconds : nil)
            return (HTTPServerResponse.listenerReply(200, stored ? "stored" : "duplicate"), stored)
        } catch {
            log.error("google_play.push_not_stored", ["message": push.messageId, "error": "\(error)"])
            // Not stored: Pub/Sub keeps it and delivers it again.
            return (HTTPServerResponse.listenerReply(503, "not stored"), false)
        }
    }

    package static func describe(_ notification: DeveloperNotification) -> (String, PurchaseToken?) {
        switch notification.kind {
        case let .oneTimeProduct(n): return ("one_time_product", n.purchaseToken)
        case let .subscription(n): return ("subscription", n.purchaseToken)
        case let .voidedPurchase(n): return ("voided_purchase", n.purchaseToken)
        case .pendingRefundReview: return ("pending_refund_review", nil)
        case .test: return ("test", nil)
        case .unknown: return ("unknown", nil)
        }
    }

    /// Stored pushes claimed at once (each host takes its own; the rest are left to others).
    static let claimBatch = 16
    /// How long a claim outlives the side work's time: one push's calls to Google at most.
    static let claimMarginSeconds: Int64 = 300

    /// Works on the stored notifications while `work` lasts, oldest first, each claimed by this
    /// host (another host never works the same push). One whose purchase Google cannot be asked
    /// about now waits for the next pass; at the first store-wide failure (Google unavailable,
    /// its Retry-After, settle's credentials refused) the rest wait too and the outcome says why,
    /// for Google's breaker. One whose effect cannot be written (a ledger constraint) is kept
    /// `not_applied` with the error, and the others go on.
    @discardableResult
    package func processPending(_ work: SideWork) throws(LedgerError) -> (done: Int, outcome: SideWorkOutcome) {
        let leaseSeconds = Int64(work.seconds.rounded(.up)) + Self.claimMarginSeconds
        var done = 0
        var outcome = SideWorkOutcome.idle
        // Claimed and left for the next pass: given back once this pass is done with Google.
        var waiting: [PlayNotificationRecord] = []
        claiming: while done + waiting.count < Self.batch {
            guard !work.isSpent else { break }
            let claimed = try ledger.claimPlayNotifications(limit: Self.claimBatch, leaseSeconds: leaseSeconds)
            if claimed.isEmpty { break }
            for (index, record) in claimed.enumerated() {
                guard !work.isSpent else {
                    log.info("google_play.notifications_paused", ["left": claimed.count - index,
                                                                  "why": "this pass's time for Google is spent"])
                    waiting += claimed[index...]
                    break claiming
                }
                defer { work.progress() }
                switch try step(record, work: work) {
                case let .finished(result, answered):
                    if answered { outcome = outcome.then(.answered) }
                    guard try ledger.finishPlayNotification(record, outcome: result.outcome, detail: result.detail,
                                                            orderId: result.orderId) else {
                        log.warning("google_play.notification_claim_lost", ["message": record.messageId,
                                                                           "why": "its claim lapsed and another host took it"])
                        continue
                    }
                    let level: Log.Level = result.outcome == "not_applied" ? .error : .info
                    log.log(level, "google_play.notification", ["message": record.messageId, "kind": record.kind, "outcome": result.outcome,
                                                                "order": result.orderId, "detail": level == .error ? result.detail : nil])
                    done += 1
                case let .waiting(answered):
                    if answered { outcome = outcome.then(.answered) }
                    waiting.append(record)
                case .recorded:
                    done += 1
                case let .storeFailed(error):
                    log.warning("google_play.notifications_deferred", ["error": error.description, "kind": error.kind.rawValue,
                                                                       "left": claimed.count - index + waiting.count,
                                                                       "why": error.kind == .paced ? "Google's quota is spent for now; the rest wait for the next pass"
                                                                           : "Google failed as a whole; the rest wait for its breaker"])
                    outcome = outcome.then(error.sideWorkOutcome)
                    waiting += claimed[index...]
                    break claiming
                }
            }
        }
        try ledger.releasePlayNotifications(waiting)
        return (done, outcome)
    }

    /// Where working on one notification got to.
    enum Step {
        /// Done with; `answered`: Google was asked and answered.
        case finished(Outcome, answered: Bool)
        /// Asked again at the next pass (Google does not show yet what it needs, or refused this request).
        case waiting(answered: Bool)
        /// Google as a whole failed: nothing more is asked of it this pass.
        case storeFailed(PlayAPIError)
        /// Done with, and its outcome already written with its effect (a refund review's answer).
        case recorded
    }

    /// Works on one claimed notification. A ledger write its effect breaks (a constraint: a row
    /// a backend wrote badly, a trigger refusing it) ends it `not_applied`, never the pass.
    private func step(_ record: PlayNotificationRecord, work: SideWork) throws(LedgerError) -> Step {
        guard let json = try? JSONValue.parse(Data(record.payload.utf8)),
              let notification = try? DeveloperNotification(json: json) else {
            return .finished(("unreadable", nil, nil), answered: false)
        }
        if let other = notification.packageName, other != packageName {
            return .finished(("other_package", "for \(other), not \(packageName)", nil), answered: false)
        }
        if let why = Self.timeRefusal(notification, record: record) {
            metrics?.observeNotification(type: "google_play_\(record.kind)", outcome: "not_applied",
                                         at: ledger.time.unixSeconds)
            return .finished(("not_applied", why + "; nothing was applied; a person looks", nil), answered: false)
        }
        do throws(LedgerError) {
            switch notification.kind {
            case let .oneTimeProduct(n):
                return try purchase(token: n.purchaseToken, sku: n.sku, purchased: n.notificationType == .purchased, renewal: false)
            case let .subscription(n):
                // The product is read from subscriptionsv2, never from the deprecated subscriptionId.
                let renewed = [.renewed, .recovered, .restarted].contains(n.notificationType)
                return try purchase(token: n.purchaseToken, sku: nil, purchased: renewed || n.notificationType == .purchased,
                                    renewal: renewed)
            case let .voidedPurchase(n):
                return try voided(n, record: record, eventMs: notification.eventTimeMillis, work: work)
            case let .pendingRefundReview(n):
                // Recorded by itself, with the order's history, in one write; or left to wait.
                return try refundReview(n, record: record, eventMs: notification.eventTimeMillis) ? .recorded : .waiting(answered: false)
            case .test:
                return .finished(("test", "a test notification from Play Console", nil), answered: false)
            case let .unknown(fields):
                return .finished(("unknown_kind", fields.joined(separator: ", "), nil), answered: false)
            }
        } catch {
            guard let violation = error.constraintViolation else { throw error }
            metrics?.observeNotification(type: "google_play_\(record.kind)", outcome: "not_applied", at: ledger.time.unixSeconds)
            return .finished(("not_applied", "a ledger write for this notification failed: \(violation); a person looks", nil),
                             answered: true)
        }
    }

    /// Why the times a notification's work counts from cannot be believed: its `eventTimeMillis`
    /// (a voided purchase is looked for around it, a refund review's deadline is a day after it)
    /// or its row's `received_at` (settle writes its own clock there; a backend writing by SQL
    /// may not). Int64.min minus an hour trapped and killed every daemon that claimed the push,
    /// so such a push is refused before anything is computed, and never claimed again.
    /// Nil when they can be believed, or when the kind's work does not use them.
    static func timeRefusal(_ notification: DeveloperNotification, record: PlayNotificationRecord) -> String? {
        switch notification.kind {
        case .voidedPurchase, .pendingRefundReview: break
        case .oneTimeProduct, .subscription, .test, .unknown: return nil
        }
        if let ms = notification.eventTimeMillis, let why = PlausibleTime.refusal(milliseconds: ms, field: "eventTimeMillis") {
            return why
        }
        return PlausibleTime.refusal(seconds: record.receivedAt, field: "received_at")
            .map { $0 + " (the row was not written by settle)" }
    }

    /// What working on one notification ended with.
    typealias Outcome = (outcome: String, detail: String?, orderId: String?)

    /// A purchase Google told of, read from Google first: what Google says decides whose it is.
    /// Nothing when its grant is held already, or when a live order of its buyer holds its token
    /// (made due now: that order takes it). Otherwise it becomes an order of its own,
    /// `play-<Google order id>`, whatever other orders hold the token (a rejected order, another
    /// user's: neither swallows the buyer's purchase), for
    ///  - the subscriber, for another period of a subscription: the user of the newest grant of
    ///    its token whose order the purchase binds to (only that, for a renewal);
    ///  - else the user of the grant it replaces (Google's linkedPurchaseToken: an upgrade, a
    ///    downgrade, a resubscription), bound the same way;
    ///  - else, for a resubscription made in the Play Store, the user of the expired grant its
    ///    `outOfAppPurchaseContext` names (`resubscriber`), bound the same way;
    ///  - else the user its obfuscated account id maps to, or the expired one's (the same rules);
    ///  - else nobody: `needs_attention` (`unclaimed_purchase`) for `settle assign`.
    /// A product missing from the configuration still becomes an order, which the pass sets aside
    /// as `unknown_product` (a paid purchase is never dropped for settle's gap).
    private func purchase(token: PurchaseToken, sku: String?, purchased: Bool, renewal: Bool) throws(LedgerError) -> Step {
        let orders = try ledger.playOrders(token: token)
        guard purchased else {
            return .finished(("noted", "nothing to deliver for this notification type", orders.first?.orderId), answered: false)
        }
        let read: Read
        do throws(PlayAPIError) {
            guard let found = try self.read(token: token, sku: sku) else {
                return .finished(("unreadable", "a one-time product notification without its sku", nil), answered: true)
            }
            read = found
        } catch {
            if error.kind == .purchaseNotFound { return .finished(("purchase_not_found", error.message, nil), answered: true) }
            if error.isStoreWide { return .storeFailed(error) }
            log.warning("google_play.notification_deferred", ["error": error.description])
            return .waiting(answered: true)
        }
        return .finished(try purchase(read, token: token, orders: orders, renewal: renewal), answered: true)
    }

    /// The purchase as Google read it, applied: the order it goes to, made if need be.
    private func purchase(_ read: Read, token: PurchaseToken, orders: [Order], renewal: Bool) throws(LedgerError) -> Outcome {
        let facts = read.facts
        let accountId = facts.accountId.map(PlayVerifier.normalized)
        // Positively another user's: the purchase names its buyer, and the order's user is someone else.
        func strangers(_ order: Order) -> Bool {
            guard let accountId, let expected = PlayVerifier.expectedAccountId(binding, order) else { return false }
            return expected != accountId
        }
        // Delivered under a verified binding: the purchase's buyer is the order's user.
        func bound(_ order: Order) -> Bool {
            guard !order.userId.isEmpty else { return false }
            guard let accountId else { return binding.tokenlessSignedProofs == .trust }
            return PlayVerifier.expectedAccountId(binding, order) == accountId
        }
        guard facts.state == .purchased || facts.state == .pending, let googleOrderId = facts.orderId else {
            let live = orders.first { $0.isLive && !strangers($0) && $0.verified == nil }
            if let live, facts.state == .pending { try ledger.makeDue(orderId: live.orderId) }
            return ("not_purchased", "Google says the purchase is not (or no longer) bought, or has no successful order yet", live?.orderId)
        }
        let probe = VerifiedPurchase(transactionId: googleOrderId, originalTransactionId: googleOrderId, productId: read.productId,
                                     environment: "", quantity: 1, purchaseDateMs: nil, expiresDateMs: nil, grantKey: googleOrderId)
        if let holder = try ledger.grantHolder(of: probe) {
            let id: String? = if case let .order(id) = holder { id } else { nil }
            return ("order_exists", "purchase \(googleOrderId) is held by \(holder.description)", id)
        }
        let orderId = PlayOrderId.prefix + googleOrderId
        if orders.contains(where: { $0.orderId == orderId }) { return ("order_exists", "purchase \(googleOrderId) has its order", orderId) }
        // The buyer's own order waiting for this purchase (not one holding another period): it takes it now.
        // One set aside for a person never does: its binding was not verified (token_unverifiable,
        // user_mismatch …), and a paid purchase it swallowed would have no order once that one is closed.
        if let live = orders.first(where: {
            $0.isLive && $0.state != .needsAttention && !strangers($0) && ($0.verified == nil || $0.verified?.grantKey == googleOrderId)
        }) {
            try ledger.makeDue(orderId: live.orderId)
            return ("order_exists", nil, live.orderId)
        }
        var user = ""
        var accountToken = facts.accountId
        var detail: String
        if let holder = try ledger.playGrants(token: token).first(where: bound) {
            user = holder.userId
            accountToken = holder.appAccountToken
            detail = "Google Play charged another period of the subscription of order \(holder.orderId) (\(token.fingerprint)): purchase \(googleOrderId)"
        } else if renewal {
            detail = "Google Play renewed a subscription (\(token.fingerprint)), purchase \(googleOrderId), and no order holds a grant of it "
                + "under a verified binding; nothing says whose it is"
        } else if let linked = read.linked, let holder = try ledger.playGrants(token: linked).first(where: bound) {
            user = holder.userId
            accountToken = holder.appAccountToken
            detail = "Google Play reported purchase \(googleOrderId) (\(token.fingerprint)), which replaces order \(holder.orderId)'s "
                + "subscription (linkedPurchaseToken): for its user \(user)"
        } else if case let .user(holder, why) = try resubscriber(read.outOfApp, bound: bound) {
            user = holder.userId
            accountToken = holder.appAccountToken
            detail = "Google Play reported purchase \(googleOrderId) (\(token.fingerprint)), "
                + "a resubscription made in the Play Store: \(why)"
        } else {
            (user, detail) = try buyer(read, accountId: accountId, bound: bound)
            detail = "Google Play reported purchase \(googleOrderId) (\(token.fingerprint)) that no backend enqueued for its buyer"
                + detail
        }
        if user.isEmpty {
            detail += "; find the buyer and run: settle assign \(Verdict.shellWord(orderId)) --user USER_ID"
        }
        guard try ledger.createPlayOrder(orderId: orderId, userId: user, productId: read.productId, token: token, accountId: accountToken,
                                         detail: detail) else {
            // A row under that id exists without this token (a backend wrote it): it is not this purchase's order.
            return ("order_id_taken", "order \(orderId) exists and does not hold this purchase token; a person looks", orderId)
        }
        log.warning("order.created_from_notification", ["order": orderId, "store": Store.googlePlay.rawValue,
                                                        "user": user.isEmpty ? nil : user])
        return ("order_created", detail, orderId)
    }

    /// A purchase as Google answers it, with the product it is for.
    struct Read {
        var facts: PlayPurchaseFacts
        var productId: String
        var linked: PurchaseToken?
        /// What a purchase made outside the app says of the expired subscription it follows.
        var outOfApp: SubscriptionPurchaseV2.OutOfAppPurchase? = nil
    }

    /// Reads the purchase behind `token`: a one-time product by its notification's `sku`, a
    /// subscription (`sku` nil) from subscriptionsv2, whose line items name its product (the
    /// first a configured Play product, else the first). Nil: nothing names the product.
    private func read(token: PurchaseToken, sku: String?) throws(PlayAPIError) -> Read? {
        if let sku {
            return Read(facts: PlayPurchaseFacts(product: try client.productPurchase(productId: sku, token: token), productId: sku),
                        productId: sku)
        }
        let subscription = try client.subscriptionPurchase(token: token)
        let items = subscription.lineItems.map(\.productId)
        guard let productId = items.first(where: { products[$0]?.stores.contains(.googlePlay) == true }) ?? items.first else {
            return nil
        }
        return Read(facts: PlayPurchaseFacts(subscription: subscription, productId: productId), productId: productId,
                    linked: subscription.linkedPurchaseToken, outOfApp: subscription.outOfAppPurchase)
    }

    /// The user an obfuscated account id stands for: the id itself when user ids are the account
    /// ids (`user_binding.app_account_token: user_id`), else the one user whose orders carry it.
    /// A version-5 UUID cannot be turned back into its user id.
    func userFor(accountId: String) throws(LedgerError) -> String? {
        switch binding.tokenSource {
        case .userId: return accountId
        case .order: return try ledger.playUser(accountId: accountId)
        case .uuid5: return nil
        }
    }
}
