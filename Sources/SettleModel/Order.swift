import SettleBase

/// Where an order is in its life (SPEC section 3). The raw values are the ledger's and the
/// status output's spelling.
package enum OrderState: String, CaseIterable, Sendable {
    case pending
    case verifying
    case delivering
    case finished
    case rejected
    case needsAttention = "needs_attention"
}

/// The facts Apple confirmed for an order's transaction; persisted before the hook runs so
/// that a re-delivery after a crash sends exactly the same payload.
package struct VerifiedPurchase: Sendable, Equatable {
    package var transactionId: String
    package var originalTransactionId: String
    package var productId: String
    /// The store's environment as the hook and the ledger show it: an `AppleEnvironment` raw
    /// value for the App Store, `PlayEnvironment`'s for Google Play, empty when a person assigned it.
    package var environment: String
    package var quantity: Int
    /// Milliseconds since the epoch, as Apple reports them.
    package var purchaseDateMs: Int64?
    package var expiresDateMs: Int64?
    /// What is granted at most once across the ledger, and the hook's idempotency key: the
    /// transaction id, except for a non-consumable, whose original transaction id it is (a
    /// restore brings a new transaction id for goods the customer already has).
    package var grantKey: String
    /// The grant this purchase replaces, by its grant key: a Google Play subscription bought as
    /// an upgrade, a downgrade or a resubscription of one the same user holds (Google's
    /// `linkedPurchaseToken`), so the hook can end the old one. Nil for anything else.
    package var replaces: String? = nil
    /// What the customer paid, as the store's answer states it (`Price`); nil when it states none.
    package var price: Price? = nil

    package init(transactionId: String, originalTransactionId: String, productId: String, environment: String,
                quantity: Int, purchaseDateMs: Int64?, expiresDateMs: Int64?, grantKey: String? = nil) {
        self.grantKey = grantKey ?? transactionId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.environment = environment
        self.quantity = quantity
        self.purchaseDateMs = purchaseDateMs
        self.expiresDateMs = expiresDateMs
    }
}

/// A paid order as the ledger holds it.
package struct Order: Sendable, Equatable {
    package var orderId: String
    package var userId: String
    package var productId: String
    /// The transaction id the backend supplied, if any.
    package var requestedTransactionId: String?
    package var receiptSHA256: String?
    package var signedTransaction: String?
    package var state: OrderState
    package var attempts: Int
    package var nextAttemptAt: Int64
    package var reason: String?
    package var lastError: String?
    /// The environment the store last answered from for this order, as stored (a routing hint
    /// too: `appleEnvironment` reads it for the App Store).
    package var environment: String?
    package var verified: VerifiedPurchase?
    package var createdAt: Int64
    package var updatedAt: Int64
    package var finishedAt: Int64?
    package var lease: Lease?
    /// The StoreKit appAccountToken the backend stored with the order (a UUID), if any.
    package var appAccountToken: String? = nil
    /// The claim's fencing token on a shared ledger (PostgreSQL): bumped at each claim, checked
    /// by every transition and sent to the hook, so a stale worker's late write is refused.
    package var fencingToken: Int64? = nil
    /// `backend` (enqueued) or `apple_notification` (Apple told settle of a purchase nobody enqueued).
    package var origin: String = "backend"
    /// Set once Apple refunded or revoked the purchase.
    package var refund: Refund? = nil
    /// Its buyer's refunds in the last 90 days (`RefundHistory`), counted as its grant is
    /// reserved (`recordVerified`) or else just before the grant hook is called, and sent as
    /// `refunds_90d`; nil anywhere else (never stored).
    package var refunds90d: Int? = nil
    /// Which store sold the purchase.
    package var store: Store
    /// A Google Play order's proof: a bearer secret, shown only by its fingerprint.
    package var purchaseToken: PurchaseToken? = nil
    /// A Google Play order whose hook said delivered, while Google is not yet told (acknowledge
    /// or consume): it is never handed to the hook again, only finished with Google.
    package var deliveredAt: Int64? = nil
    /// The signed AppTransaction (JWS) the backend gave with the order (`app_transaction`):
    /// verified, it links its `appTransactionId` to the order's user.
    package var appTransaction: String? = nil
    /// A store module's proof, as its module wrote it and alone reads (`StoreProof`): the core
    /// stores it, compares it and never shows it (it may be a bearer secret).
    package var storeProof: StoreProof? = nil
    /// The receipt stored with the order (`receiptSHA256`), read with its claim and checked
    /// against its hash, so verification need not read it again; nil when not read that way.
    /// A copy of what the ledger holds, not part of the order: equal orders may differ in it.
    package var storedReceipt: String? {
        get { attachedReceipt.text }
        set { attachedReceipt.text = newValue }
    }
    private var attachedReceipt = AttachedText()

    /// Whether the order names the one purchase it claims (a transaction id or a signed
    /// transaction), rather than "a purchase of this product" in a receipt.
    package var namesTransaction: Bool { requestedTransactionId != nil || signedTransaction != nil }

    /// When the store refunds this purchase unless it hears of the delivery: its purchase time
    /// (or, before the store confirmed it, the enqueue) plus the store's window; nil when the
    /// store never does, or the order is settled.
    package var refundDeadline: Int64? {
        guard let window = store.refundWindowSeconds, [.pending, .verifying, .delivering, .needsAttention].contains(state) else { return nil }
        // Saturating: a row a backend wrote by SQL may hold any time, and the pass computes from this.
        return (verified?.purchaseDateMs.map { $0 / 1000 } ?? createdAt).saturatingAdding(window)
    }

    /// What support and the hook see as the order's transaction: Apple's, once verified.
    package var transactionId: String? { verified?.transactionId ?? requestedTransactionId }

    package init(orderId: String, userId: String, productId: String, requestedTransactionId: String? = nil, receiptSHA256: String? = nil, signedTransaction: String? = nil, state: OrderState, attempts: Int, nextAttemptAt: Int64, reason: String? = nil, lastError: String? = nil, environment: String? = nil, verified: VerifiedPurchase? = nil, createdAt: Int64, updatedAt: Int64, finishedAt: Int64? = nil, lease: Lease? = nil, appAccountToken: String? = nil, fencingToken: Int64? = nil, origin: String = "", refund: Refund? = nil, store: Store = .ofUnnamedOrders, purchaseToken: PurchaseToken? = nil, deliveredAt: Int64? = nil) {
        self.orderId = orderId
        self.userId = userId
        self.productId = productId
        self.requestedTransactionId = requestedTransactionId
        self.receiptSHA256 = receiptSHA256
        self.signedTransaction = signedTransaction
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.reason = reason
        self.lastError = lastError
        self.environment = environment
        self.verified = verified
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.finishedAt = finishedAt
        self.lease = lease
        self.appAccountToken = appAccountToken
        self.fencingToken = fencingToken
        self.origin = origin
        self.refund = refund
        self.store = store
        self.purchaseToken = purchaseToken
        self.deliveredAt = deliveredAt
    }
}

/// Apple took an order's purchase back.
package struct Refund: Sendable, Equatable {
    /// When settle learned of it (Unix seconds).
    package var at: Int64
    /// `REFUND` or `REVOKE`.
    package var kind: String
    /// Apple's revocationReason, if given.
    package var reason: String?

    package init(at: Int64, kind: String, reason: String? = nil) {
        self.at = at
        self.kind = kind
        self.reason = reason
    }
}

/// Who holds an order in `verifying` or `delivering`, and until when.
package struct Lease: Sendable, Equatable {
    package var owner: LeaseOwner
    package var expiresAt: Int64

    package init(owner: LeaseOwner, expiresAt: Int64) {
        self.owner = owner
        self.expiresAt = expiresAt
    }
}

/// One history row: a verification, a delivery, a rescue or a person's note.
package struct HistoryEntry: Sendable, Equatable {
    package enum Kind: String, Sendable { case enqueue, verification, delivery, rescue, retry, notification, revoke, consumption, assign }
    package var at: Int64
    package var kind: Kind
    package var outcome: String
    package var appleStatus: Int?
    package var hookExit: Int?
    package var environment: String?
    package var durationMs: Int?
    package var detail: String?

    package init(at: Int64, kind: Kind, outcome: String, appleStatus: Int? = nil, hookExit: Int? = nil,
                environment: String? = nil, durationMs: Int? = nil, detail: String? = nil) {
        self.at = at
        self.kind = kind
        self.outcome = outcome
        self.appleStatus = appleStatus
        self.hookExit = hookExit
        self.environment = environment
        self.durationMs = durationMs
        self.detail = detail
    }
}

/// A new order and its proof of purchase, as `settle enqueue` records it.
package struct NewOrder: Sendable, Equatable {
    package var orderId: String
    package var userId: String
    package var productId: String
    package var transactionId: String?
    /// Base64 app receipt, as the device uploaded it.
    package var receipt: String?
    /// StoreKit 2 compact JWS.
    package var signedTransaction: String?
    /// The appAccountToken the app passed to StoreKit for this user (a UUID), if the backend keeps
    /// one; for a Google Play order, the obfuscatedExternalAccountId the app passed to Play Billing.
    package var appAccountToken: String?
    package var store: Store
    /// A Google Play order's purchase token (its proof; required for `.googlePlay`).
    package var purchaseToken: PurchaseToken?
    /// The signed AppTransaction the user's app read (`AppTransaction.shared`), if the backend has it.
    package var appTransaction: String?
    /// A store module's proof (kind, proof, lookup key), for a store whose proof has no
    /// columns of its own.
    package var storeProof: StoreProof? = nil

    package init(orderId: String, userId: String, productId: String, transactionId: String? = nil,
                receipt: String? = nil, signedTransaction: String? = nil, appAccountToken: String? = nil,
                store: Store = .ofUnnamedOrders, purchaseToken: PurchaseToken? = nil, appTransaction: String? = nil) {
        self.appTransaction = appTransaction
        self.store = store
        self.purchaseToken = purchaseToken
        self.appAccountToken = appAccountToken
        self.orderId = orderId
        self.userId = userId
        self.productId = productId
        self.transactionId = transactionId
        self.receipt = receipt
        self.signedTransaction = signedTransaction
    }
}

/// Text read alongside an order (`Order.storedReceipt`), left out of the order's equality.
struct AttachedText: Sendable, Equatable {
    var text: String?

    static func == (lhs: AttachedText, rhs: AttachedText) -> Bool { true }
}
