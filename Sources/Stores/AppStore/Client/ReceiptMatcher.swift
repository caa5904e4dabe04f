import SettleBase
import SettleModel

/// Decides what a valid verifyReceipt answer offers an order (SPEC section 4): the receipt's
/// bundle and environment, then the order's own transaction or every purchase of its product,
/// through `PurchaseEligibility`. Pure: which candidate the order gets is decided when the
/// ledger reserves it.
package struct ReceiptMatcher: Sendable {
    package var bundleId: String
    package var acceptSandbox: Bool
    package var eligibility: PurchaseEligibility

    package init(bundleId: String, acceptSandbox: Bool, eligibility: PurchaseEligibility) {
        self.bundleId = bundleId
        self.acceptSandbox = acceptSandbox
        self.eligibility = eligibility
    }

    /// `environment` is the answer's `environment`, or the endpoint's when Apple left it out,
    /// as text: verifyReceipt's answer is recorded as Apple worded it (see `ReceiptResponse`).
    package func match(_ response: ReceiptResponse, environment: String, order: Order) -> VerificationOutcome {
        guard response.bundleId == bundleId else {
            return .rejected(reason: .bundleMismatch,
                             detail: "receipt is for bundle \(response.bundleId ?? "(none)"), expected \(bundleId)")
        }
        if AppleEnvironment(rawValue: environment) == .sandbox && !acceptSandbox {
            return .rejected(reason: .sandboxNotAccepted, detail: "sandbox purchase and accept_sandbox is false")
        }
        var transactions = response.transactions
        if let wanted = order.requestedTransactionId {
            transactions = transactions.filter { $0.transactionId == wanted }
            guard !transactions.isEmpty else {
                return .rejected(reason: .transactionNotFound,
                                 detail: "transaction \(wanted) is not in the receipt (\(response.transactions.count) transactions)")
            }
        }
        let confirmed = transactions.map { t in
            ConfirmedPurchase(
                transactionId: t.transactionId, originalTransactionId: t.originalTransactionId, productId: t.productId,
                environment: environment, quantity: t.quantity, purchaseDateMs: t.purchaseDateMs, expiresDateMs: t.expiresDateMs,
                refunded: t.cancellationDateMs.map { $0 > 0 ? "was refunded or revoked at " + Timestamp.rfc3339(milliseconds: $0)
                                                             : "was refunded or revoked" },
                isUpgraded: t.isUpgraded, appAccountToken: t.appAccountToken)
        }
        // Apple validated the receipt: it is signed data from the customer's device.
        return eligibility.decide(confirmed, order: order, named: order.requestedTransactionId != nil, proofSigned: true)
    }
}
