import Foundation
import SettleBase
import SettleModel

/// Verifies orders through StoreKit 2 signed data and the App Store Server API: a device's
/// signed transaction (checked locally, then confirmed with Apple when the Server API is
/// configured), a bare transaction id, or a legacy receipt whose ids lead to the customer's
/// purchases.
package struct StoreKitVerifier: OrderVerifier {
    package var signedData: SignedDataVerifier
    package var api: AppStoreServerClient?
    package var eligibility: PurchaseEligibility
    package var time: any TimeSource
    /// What a stored legacy receipt says (nil when receipts are not handled here).
    package var legacyReceipt: (@Sendable (Order) throws -> LegacyReceiptIds?)?
    /// The users the ledger learned these `appTransactionId`s are (nil: none is looked up).
    package var linkedUsers: (@Sendable ([String]) throws -> LinkedAppTransactions)?
    /// The order's own verified AppTransaction and its user, counted as linked while this
    /// order is decided (the pass records the link itself, `Verification.learned`).
    private var orderLink: (appTransactionId: String, userId: String)?

    /// A transaction Apple does not know yet may be brand new: this many spaced retries
    /// (the order's backoff) before it is rejected as not found.
    package static let notFoundRetries = 2
    /// How many of a receipt's ids are tried as the start of the customer's history before it is
    /// taken as unknown to Apple.
    package static let historyStartAttempts = 3
    /// The most pages of one customer's history read for one order (20 purchases a page): a
    /// bound on what one order can cost. Past it the order needs a person, never a rejection.
    package var historyPageCap = 500

    package init(signedData: SignedDataVerifier, api: AppStoreServerClient?, eligibility: PurchaseEligibility,
                time: any TimeSource, legacyReceipt: (@Sendable (Order) throws -> LegacyReceiptIds?)? = nil) {
        self.signedData = signedData
        self.api = api
        self.eligibility = eligibility
        self.time = time
        self.legacyReceipt = legacyReceipt
    }

    package func verify(_ order: Order) throws -> Verification {
        let started = DispatchTime.now()
        let learned: AppTransaction?
        switch appTransaction(of: order) {
        case let .failure(refused): return refused.verification
        case let .success(app): learned = app
        }
        var this = self
        this.orderLink = learned.map { ($0.appTransactionId, order.userId) }
        var verification = try this.route(order)
        verification.learned = learned
        verification.durationMs = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
        return verification
    }

    /// An order may carry the signed AppTransaction its user's app read (`app_transaction`): once
    /// it verifies, its `appTransactionId` counts as the user's while the purchase is decided,
    /// so a tokenless purchase of that Apple Account binds to them. One that does not verify
    /// ends the order as a forged proof does: it must not claim someone else's account.
    package func appTransaction(of order: Order) -> Result<AppTransaction?, VerificationFailure> {
        guard let token = order.appTransaction else { return .success(nil) }
        switch signedData.verifyAppTransaction(token, now: time.now) {
        case let .failure(failure):
            return .failure(VerificationFailure(Verification(
                outcome: .rejected(reason: reason(failure), detail: "the order's app transaction: \(failure)"))))
        case let .success(app):
            return .success(app)
        }
    }

    private func route(_ order: Order) throws -> Verification {
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
                return Verification(outcome: decide([device], order: order, named: true, proofSigned: true), environment: device.environment.rawValue)
            }
            return confirm(device.transactionId, order: order, proofSigned: true)
        }
        if order.receiptSHA256 != nil, let legacyReceipt {
            guard let receipt = try legacyReceipt(order) else {
                return Verification(outcome: .needsAttention(
                    reason: .proofMissing, detail: "the order's receipt is missing from the ledger or does not hash to its receipt_sha256"))
            }
            return verifyLegacyReceipt(order, receipt: receipt)
        }
        if let id = order.requestedTransactionId {
            return confirm(id, order: order, proofSigned: false)
        }
        return Verification(outcome: .needsAttention(reason: .proofMissing, detail: "the order has no proof this configuration can verify"))
    }

    /// Asks Apple for the transaction and decides from Apple's own signed answer.
    private func confirm(_ transactionId: String, order: Order, proofSigned: Bool) -> Verification {
        switch fetch(transactionId, order: order) {
        case let .transaction(transaction):
            return Verification(outcome: decide([transaction], order: order, named: true, proofSigned: proofSigned),
                                environment: transaction.environment.rawValue, storeAnswered: true)
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
            return .answer(Verification(outcome: .needsAttention(
                reason: .serverAPIRequired, detail: "the order's only proof is transaction id \(transactionId); verifying it needs server_api in the configuration")))
        }
        let (lookup, answered) = api.transactionInfo(transactionId)
        switch lookup {
        case let .found(jws, environment):
            switch verifyApple(jws, environment: environment) {
            case let .success(transaction): return .transaction(transaction)
            case let .failure(failure): return .answer(failure.verification)
            }
        case let .notFound(message):
            return .answer(notFound(message, order: order))
        case let .invalidId(message):
            return .answer(Verification(outcome: .rejected(reason: .transactionNotFound, detail: message), storeAnswered: true))
        case let .failed(outcome):
            return .answer(Verification(outcome: outcome, storeAnswered: answered))
        }
    }

    /// Checks a JWS from Apple's own answer.
    private func verifyApple(_ jws: String, environment: AppleEnvironment) -> Result<SignedTransaction, VerificationFailure> {
        switch signedData.verifyTransaction(jws, now: time.now) {
        case let .success(transaction):
            return .success(transaction)
        case let .failure(failure):
            switch failure {
            case .bundleMismatch, .environmentMismatch, .sandboxNotAccepted:
                return .failure(VerificationFailure(Verification(outcome: .rejected(reason: reason(failure), detail: "Apple's answer: \(failure)"),
                                                                 environment: environment.rawValue, storeAnswered: true)))
            default:
                // Apple's own answer must verify; if it doesn't, something is between us (or the roots are wrong).
                return .failure(VerificationFailure(Verification(outcome: .retry("Apple's signed transaction failed verification: \(failure)"),
                                                                 environment: environment.rawValue, storeAnswered: true)))
            }
        }
    }

    private func notFound(_ message: String, order: Order) -> Verification {
        guard order.attempts >= StoreKitVerifier.notFoundRetries else {
            return Verification(outcome: .retry("\(message); a new transaction can take a moment to appear"), storeAnswered: true)
        }
        return Verification(outcome: .rejected(reason: .transactionNotFound, detail: message), storeAnswered: true)
    }

    /// A legacy receipt leads to the customer: Apple's history of any of its ids lists every
    /// purchase the customer made, however long the receipt. Only Apple's verified answers
    /// count; the receipt's own signature decides whether it binds the purchases to the user.
    private func verifyLegacyReceipt(_ order: Order, receipt: LegacyReceiptIds) -> Verification {
        // A receipt for another app names that app's customers' ids: none is looked up. A
        // transaction receipt's unsigned `bid` is compared when present, as a cheap refusal.
        if receipt.format == .appReceipt || receipt.bundleId != nil, receipt.bundleId != signedData.bundleId {
            let named = receipt.bundleId.map { "is for \($0)" } ?? "names no app"
            return Verification(outcome: .rejected(reason: .bundleMismatch, detail: "the receipt \(named), expected \(signedData.bundleId)"))
        }
        guard !receipt.transactionIds.isEmpty else {
            return Verification(outcome: .rejected(reason: .transactionNotFound, detail: "the receipt names no in-app purchase"))
        }
        if receipt.format == .transactionReceipt, let named = receipt.transactionIds.first {
            // The id it names is a lookup key like any bare id (Apple's libraries read it the same
            // way); an order naming another id stands on that id alone, as below.
            return confirm(order.requestedTransactionId ?? named, order: order, proofSigned: false)
        }
        let customer: [SignedTransaction]
        switch customerTransactions(receipt.transactionIds, order: order) {
        case let .success(found): customer = found
        case let .failure(failure): return failure.verification
        }
        let environment = customer.first?.environment.rawValue
        if let wanted = order.requestedTransactionId {
            guard let mine = customer.first(where: { $0.transactionId == wanted }) else {
                // Not among the receipt's customer's purchases: the id alone is all the proof there is.
                return confirm(wanted, order: order, proofSigned: false)
            }
            return Verification(outcome: decide([mine], order: order, named: true, proofSigned: receipt.signatureVerified),
                                environment: mine.environment.rawValue, storeAnswered: true)
        }
        return Verification(outcome: decide(customer, order: order, named: false, proofSigned: receipt.signatureVerified),
                            environment: environment, storeAnswered: true)
    }

    /// Every purchase of the customer a receipt belongs to, verified: Get Transaction History
    /// from the first id Apple knows, so a receipt of any length is read in full.
    private func customerTransactions(_ ids: [String], order: Order) -> Result<[SignedTransaction], VerificationFailure> {
        guard let api else {
            return .failure(VerificationFailure(Verification(outcome: .needsAttention(
                reason: .serverAPIRequired, detail: "reading a receipt without receipt_api needs server_api"))))
        }
        var last = Verification(outcome: .rejected(reason: .transactionNotFound, detail: "the receipt names no in-app purchase"))
        // A few ids at most: any one of the customer's ids yields the whole history.
        for id in ids.prefix(StoreKitVerifier.historyStartAttempts) {
            let (lookup, answered) = api.transactionHistory(id, maxPages: historyPageCap)
            switch lookup {
            case let .found(history):
                var byId: [String: SignedTransaction] = [:]
                var order_: [String] = []
                for jws in history.signedTransactions {
                    switch verifyApple(jws, environment: history.environment) {
                    case let .success(t):
                        if byId[t.transactionId] == nil { order_.append(t.transactionId) }
                        // ASCENDING by modification: a later copy of a transaction is the newer one.
                        byId[t.transactionId] = t
                    case let .failure(failure):
                        return .failure(failure)
                    }
                }
                return .success(order_.compactMap { byId[$0] })
            case let .notFound(message), let .invalidId(message):
                last = notFound(message, order: order)
                guard case .rejected = last.outcome else { return .failure(VerificationFailure(last)) }
            case let .pageCapExceeded(message):
                return .failure(VerificationFailure(Verification(outcome: .needsAttention(reason: .historyIncomplete, detail: message),
                                                                 storeAnswered: true)))
            case let .failed(outcome):
                return .failure(VerificationFailure(Verification(outcome: outcome, storeAnswered: answered)))
            }
        }
        return .failure(VerificationFailure(last))
    }

    private func decide(_ transactions: [SignedTransaction], order: Order, named: Bool, proofSigned: Bool) -> VerificationOutcome {
        let confirmed = transactions.map { t in
            var purchase = ConfirmedPurchase(
                transactionId: t.transactionId, originalTransactionId: t.originalTransactionId, productId: t.productId,
                environment: t.environment.rawValue, quantity: t.quantity, purchaseDateMs: t.purchaseDateMs,
                expiresDateMs: t.expiresDateMs,
                refunded: t.revocationDateMs.map { "was revoked at \(Timestamp.rfc3339(milliseconds: $0))" },
                isUpgraded: t.isUpgraded, appAccountToken: t.appAccountToken, appTransactionId: t.appTransactionId,
                familyShared: t.isFamilyShared)
            purchase.price = t.price
            return purchase
        }
        let ids = Array(Set(transactions.compactMap(\.appTransactionId))).sorted()
        var linked: LinkedAppTransactions = [:]
        do {
            if !ids.isEmpty, let linkedUsers { linked = try linkedUsers(ids) }
            if let orderLink { linked[orderLink.appTransactionId, default: []].insert(orderLink.userId) }
        } catch {
            // Deciding without them could refuse a purchase its user is linked to: later, not wrong.
            return .retry("reading which users the purchase's appTransactionId is linked to: \(error)")
        }
        return eligibility.decide(confirmed, order: order, named: named, proofSigned: proofSigned, linked: linked)
    }

    private func reason(_ failure: SignedDataFailure) -> RejectionReason {
        switch failure {
        case .bundleMismatch: return .bundleMismatch
        case .payloadInvalid: return .payloadInvalid
        case .environmentMismatch: return .environmentMismatch
        case .sandboxNotAccepted: return .sandboxNotAccepted
        default: return .signatureInvalid
        }
    }
}

/// A verification that ends the order's attempt, carried as an error through `Result`.
package struct VerificationFailure: Error {
    package var verification: Verification
    package init(_ verification: Verification) { self.verification = verification }
}

/// What a stored legacy receipt names, read locally.
package struct LegacyReceiptIds: Sendable, Equatable {
    /// Which kind of receipt the ids come from.
    package enum Format: Sendable, Equatable {
        /// A PKCS#7 app receipt (iOS 7 and later): any of its ids leads to the customer's history.
        case appReceipt
        /// An iOS 6 transaction receipt: it names one transaction, and settle does not check its
        /// proprietary signature, so it proves no more than the bare id it names.
        case transactionReceipt
    }

    /// Every transaction id the receipt names: lookup keys for Apple, never trusted by themselves.
    package var transactionIds: [String]
    /// Whether the receipt's PKCS#7 signature chains to a configured Apple root: only then is it
    /// a signed proof that binds its purchases to the customer who uploaded it.
    package var signatureVerified: Bool
    /// The app the receipt is for; compared with `bundle_id` before any of its ids is used.
    package var bundleId: String?
    package var format: Format

    package init(transactionIds: [String], signatureVerified: Bool, bundleId: String?, format: Format = .appReceipt) {
        self.transactionIds = transactionIds
        self.signatureVerified = signatureVerified
        self.bundleId = bundleId
        self.format = format
    }
}
