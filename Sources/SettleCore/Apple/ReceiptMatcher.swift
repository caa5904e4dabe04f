/// Decides whether a valid verifyReceipt answer grants an order (SPEC section 4). Pure:
/// the only outside fact it needs, who holds a transaction, is passed in.
public struct ReceiptMatcher: Sendable {
    public var bundleId: String
    public var acceptSandbox: Bool
    public var products: Set<String>

    public init(bundleId: String, acceptSandbox: Bool, products: Set<String>) {
        self.bundleId = bundleId
        self.acceptSandbox = acceptSandbox
        self.products = products
    }

    /// `environment` is the answer's `environment`, or the endpoint's when Apple left it out.
    public func match(_ response: ReceiptResponse, environment: String, order: Order,
                      grantHolder: (String) throws -> String?) rethrows -> VerificationOutcome {
        guard response.bundleId == bundleId else {
            return .rejected(reason: .bundleMismatch,
                             detail: "receipt is for bundle \(response.bundleId ?? "(none)"), expected \(bundleId)")
        }
        if environment == "Sandbox" && !acceptSandbox {
            return .rejected(reason: .sandboxNotAccepted, detail: "sandbox purchase and accept_sandbox is false")
        }
        let transaction: ReceiptTransaction
        if let wanted = order.requestedTransactionId {
            guard let found = response.transactions.first(where: { $0.transactionId == wanted }) else {
                return .rejected(reason: .transactionNotFound,
                                 detail: "transaction \(wanted) is not in the receipt (\(response.transactions.count) transactions)")
            }
            transaction = found
        } else {
            switch try oldestUngranted(response.transactions, order: order, grantHolder: grantHolder) {
            case let .found(found): transaction = found
            case let .none(outcome): return outcome
            }
        }
        guard transaction.productId == order.productId else {
            return .rejected(reason: .productMismatch,
                             detail: "transaction \(transaction.transactionId) is for \(transaction.productId), order is for \(order.productId)")
        }
        guard products.contains(transaction.productId) else {
            return .rejected(reason: .unknownProduct, detail: "product \(transaction.productId) is not in the configuration's products")
        }
        if let cancelled = transaction.cancellationDateMs {
            let when = cancelled > 0 ? " at " + Timestamp.rfc3339(milliseconds: cancelled) : ""
            return .rejected(reason: .refunded, detail: "transaction \(transaction.transactionId) was refunded or revoked\(when)")
        }
        if let holder = try grantHolder(transaction.transactionId), holder != order.orderId {
            return .rejected(reason: .alreadyGranted, detail: "transaction \(transaction.transactionId) was already granted to order \(holder)")
        }
        return .verified(VerifiedPurchase(
            transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId,
            productId: transaction.productId, environment: environment, quantity: max(1, transaction.quantity),
            purchaseDateMs: transaction.purchaseDateMs, expiresDateMs: transaction.expiresDateMs))
    }

    private enum Pick { case found(ReceiptTransaction), none(VerificationOutcome) }

    /// For an order without a transaction id: the oldest transaction of its product that no
    /// other order holds. A transaction this order already holds (an earlier pass reserved it)
    /// comes first, so a retried order keeps its transaction.
    private func oldestUngranted(_ transactions: [ReceiptTransaction], order: Order,
                                 grantHolder: (String) throws -> String?) rethrows -> Pick {
        let ofProduct = transactions.filter { $0.productId == order.productId }
        guard !ofProduct.isEmpty else {
            return .none(.rejected(reason: .transactionNotFound, detail: "the receipt has no transaction of \(order.productId)"))
        }
        var free: [ReceiptTransaction] = []
        var heldElsewhere: [(String, String)] = []
        for transaction in ofProduct {
            switch try grantHolder(transaction.transactionId) {
            case order.orderId?: return .found(transaction)
            case let other?: heldElsewhere.append((transaction.transactionId, other))
            case nil: free.append(transaction)
            }
        }
        // Oldest by purchase time, numerically; never by id strings (ids are not ordered).
        let byAge = free.sorted { ($0.purchaseDateMs ?? .max, $0.transactionId) < ($1.purchaseDateMs ?? .max, $1.transactionId) }
        if let live = byAge.first(where: { $0.cancellationDateMs == nil }) { return .found(live) }
        if let refunded = byAge.first { return .found(refunded) }
        let (txn, holder) = heldElsewhere[0]
        return .none(.rejected(reason: .alreadyGranted,
                               detail: "every transaction of \(order.productId) in the receipt is already granted (\(txn) to order \(holder))"))
    }
}
