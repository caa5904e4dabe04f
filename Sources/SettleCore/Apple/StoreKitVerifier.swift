import Foundation

/// Verifies orders through StoreKit 2 signed data and the App Store Server API: a device's
/// signed transaction (checked locally, then confirmed with Apple when the Server API is
/// configured), a bare transaction id, or a legacy receipt used only as a lookup key.
public struct StoreKitVerifier: OrderVerifier {
    public var signedData: SignedDataVerifier
    public var api: AppStoreServerClient?
    public var products: Set<String>
    public var time: any TimeSource
    /// The transaction ids a stored legacy receipt names (nil when receipts are not handled here).
    public var receiptTransactionIds: (@Sendable (Order) throws -> [String])?

    /// A transaction Apple does not know yet may be brand new: this many spaced retries
    /// (the order's backoff) before it is rejected as not found.
    public static let notFoundRetries = 2
    /// At most this many ids of one legacy receipt are looked up.
    public static let maxReceiptLookups = 20

    public init(signedData: SignedDataVerifier, api: AppStoreServerClient?, products: Set<String>,
                time: any TimeSource, receiptTransactionIds: (@Sendable (Order) throws -> [String])? = nil) {
        self.signedData = signedData
        self.api = api
        self.products = products
        self.time = time
        self.receiptTransactionIds = receiptTransactionIds
    }

    public func verify(_ order: Order, grantHolder: (String) throws -> String?) throws -> Verification {
        let started = DispatchTime.now()
        var verification = try route(order, grantHolder: grantHolder)
        verification.durationMs = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
        return verification
    }

    private func route(_ order: Order, grantHolder: (String) throws -> String?) throws -> Verification {
        if let token = order.signedTransaction {
            let device: SignedTransaction
            switch signedData.verifyTransaction(token, now: time.now) {
            case let .failure(failure):
                // A forged proof must not claim someone else's purchase, even one Apple knows.
                return Verification(outcome: .rejected(reason: reason(failure), detail: "the order's signed transaction: \(failure)"))
            case let .success(transaction):
                device = transaction
            }
            if let claimed = order.requestedTransactionId, claimed != device.transactionId, claimed != device.originalTransactionId {
                return Verification(outcome: .rejected(reason: .transactionNotFound,
                                                       detail: "the signed transaction is \(device.transactionId), the order names \(claimed)"))
            }
            guard api != nil else {
                return Verification(outcome: try decide(device, order: order, grantHolder: grantHolder), environment: device.environment)
            }
            return try confirm(device.transactionId, order: order, grantHolder: grantHolder)
        }
        if order.receiptSHA256 != nil, let receiptTransactionIds {
            return try verifyLegacyReceipt(order, ids: receiptTransactionIds(order), grantHolder: grantHolder)
        }
        if let id = order.requestedTransactionId {
            return try confirm(id, order: order, grantHolder: grantHolder)
        }
        return Verification(outcome: .retry("the order has no proof this verifier can use"))
    }

    /// Asks Apple for the transaction and decides from Apple's own signed answer.
    private func confirm(_ transactionId: String, order: Order, grantHolder: (String) throws -> String?) throws -> Verification {
        switch fetch(transactionId, order: order) {
        case let .transaction(transaction): return try finish(transaction, order: order, grantHolder: grantHolder)
        case let .answer(verification): return verification
        }
    }

    /// Apple's verified transaction, or the verification that ends the order's attempt.
    private enum Fetched {
        case transaction(SignedTransaction)
        case answer(Verification)
    }

    private func fetch(_ transactionId: String, order: Order) -> Fetched {
        guard let api else {
            return .answer(Verification(outcome: .retry("the order has only a transaction id; verifying it needs server_api in the configuration")))
        }
        let (lookup, answered) = api.transactionInfo(transactionId)
        switch lookup {
        case let .found(jws, environment):
            switch signedData.verifyTransaction(jws, now: time.now) {
            case let .success(transaction):
                return .transaction(transaction)
            case let .failure(failure):
                switch failure {
                case .bundleMismatch, .environmentMismatch:
                    return .answer(Verification(outcome: .rejected(reason: reason(failure), detail: "Apple's answer: \(failure)"),
                                                environment: environment, appleAnswered: true))
                default:
                    // Apple's own answer must verify; if it doesn't, something is between us (or the roots are wrong).
                    return .answer(Verification(outcome: .retry("Apple's signedTransactionInfo failed verification: \(failure)"),
                                                environment: environment, appleAnswered: true))
                }
            }
        case let .notFound(message):
            guard order.attempts >= StoreKitVerifier.notFoundRetries else {
                return .answer(Verification(outcome: .retry("\(message); a new transaction can take a moment to appear"),
                                            appleAnswered: true))
            }
            return .answer(Verification(outcome: .rejected(reason: .transactionNotFound, detail: message), appleAnswered: true))
        case let .invalidId(message):
            return .answer(Verification(outcome: .rejected(reason: .transactionNotFound, detail: message), appleAnswered: true))
        case let .failed(outcome):
            return .answer(Verification(outcome: outcome, appleAnswered: answered))
        }
    }

    /// A legacy receipt is only a lookup key: every id it names is looked up with Apple once
    /// and only Apple's verified answers count.
    private func verifyLegacyReceipt(_ order: Order, ids: [String], grantHolder: (String) throws -> String?) throws -> Verification {
        if let wanted = order.requestedTransactionId {
            return try confirm(wanted, order: order, grantHolder: grantHolder)
        }
        guard !ids.isEmpty else {
            return Verification(outcome: .rejected(reason: .transactionNotFound, detail: "the receipt names no in-app purchase"))
        }
        var candidates: [SignedTransaction] = []
        var heldElsewhere: String?
        var last = Verification(outcome: .retry("no transaction of the receipt could be confirmed"))
        for id in ids.prefix(StoreKitVerifier.maxReceiptLookups) {
            let transaction: SignedTransaction
            switch fetch(id, order: order) {
            case let .transaction(found):
                transaction = found
            case let .answer(verification):
                guard case .rejected(.transactionNotFound, _) = verification.outcome else {
                    // An outage or a fault stops the search: the answer for this order is that.
                    return verification
                }
                last = verification
                continue
            }
            // Another product or a refunded purchase is not this order's; remember why, look further.
            let unowned = try finish(transaction, order: order, grantHolder: { _ in nil })
            guard case .verified = unowned.outcome else {
                last = unowned
                continue
            }
            switch try grantHolder(transaction.transactionId) {
            case order.orderId?: return try finish(transaction, order: order, grantHolder: grantHolder)
            case let other?: heldElsewhere = "\(transaction.transactionId) to order \(other)"
            case nil: candidates.append(transaction)
            }
        }
        if let oldest = candidates.min(by: { ($0.purchaseDateMs ?? .max, $0.transactionId) < ($1.purchaseDateMs ?? .max, $1.transactionId) }) {
            return try finish(oldest, order: order, grantHolder: grantHolder)
        }
        if let heldElsewhere {
            return Verification(outcome: .rejected(reason: .alreadyGranted,
                                                   detail: "every transaction of \(order.productId) in the receipt is already granted (\(heldElsewhere))"),
                                appleAnswered: true)
        }
        return last
    }

    private func finish(_ transaction: SignedTransaction, order: Order, grantHolder: (String) throws -> String?) throws -> Verification {
        Verification(outcome: try decide(transaction, order: order, grantHolder: grantHolder), environment: transaction.environment,
                     appleAnswered: true)
    }

    /// The rules of SPEC section 4 on a verified transaction.
    private func decide(_ t: SignedTransaction, order: Order, grantHolder: (String) throws -> String?) throws -> VerificationOutcome {
        guard t.productId == order.productId else {
            return .rejected(reason: .productMismatch, detail: "transaction \(t.transactionId) is for \(t.productId), order is for \(order.productId)")
        }
        guard products.contains(t.productId) else {
            return .rejected(reason: .unknownProduct, detail: "product \(t.productId) is not in the configuration's products")
        }
        if let revoked = t.revocationDateMs {
            return .rejected(reason: .refunded, detail: "transaction \(t.transactionId) was revoked at \(Timestamp.rfc3339(milliseconds: revoked))")
        }
        if let holder = try grantHolder(t.transactionId), holder != order.orderId {
            return .rejected(reason: .alreadyGranted, detail: "transaction \(t.transactionId) was already granted to order \(holder)")
        }
        return .verified(VerifiedPurchase(transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
                                          productId: t.productId, environment: t.environment, quantity: max(1, t.quantity),
                                          purchaseDateMs: t.purchaseDateMs, expiresDateMs: t.expiresDateMs))
    }

    private func reason(_ failure: SignedDataFailure) -> RejectionReason {
        switch failure {
        case .bundleMismatch: return .bundleMismatch
        case let .environmentMismatch(detail): return detail.contains("Sandbox") ? .sandboxNotAccepted : .environmentMismatch
        default: return .signatureInvalid
        }
    }
}
