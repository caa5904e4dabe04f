import SettleBase
import SettleModel

/// One in-app transaction of a verifyReceipt answer (an entry of `receipt.in_app` or
/// `latest_receipt_info`, or an iOS 6-style receipt itself), read leniently: Apple sends
/// numbers as strings, ids sometimes as JSON numbers.
/// https://developer.apple.com/documentation/appstorereceipts/responsebody/receipt/in_app
package struct ReceiptTransaction: Sendable, Equatable {
    package var transactionId: String
    package var originalTransactionId: String
    package var productId: String
    package var quantity: Int
    package var purchaseDateMs: Int64?
    package var expiresDateMs: Int64?
    package var cancellationDateMs: Int64?
    /// `is_upgraded`: the subscription was cancelled because the customer upgraded.
    /// https://developer.apple.com/documentation/appstorereceipts/is_upgraded
    package var isUpgraded: Bool
    /// `app_account_token` in lowercase with hyphens; nil when absent or empty.
    /// https://developer.apple.com/documentation/appstorereceipts/app_account_token
    package var appAccountToken: String?

    package init?(_ json: JSONValue) {
        guard json.objectMembers != nil,
              let txn = json["transaction_id"]?.looseString, !txn.isEmpty,
              let product = json["product_id"]?.looseString, !product.isEmpty else { return nil }
        transactionId = txn
        originalTransactionId = json["original_transaction_id"]?.looseString ?? txn
        productId = product
        quantity = Int(json["quantity"]?.looseInt64 ?? 1)
        purchaseDateMs = json["purchase_date_ms"]?.looseInt64
        // iOS 6-style receipts have no `expires_date_ms`: their `expires_date` is the milliseconds
        // (iOS 7 answers put formatted text there, which does not read as a number).
        expiresDateMs = json["expires_date_ms"]?.looseInt64 ?? json["expires_date"]?.looseInt64
        // Present only when Apple refunded or revoked the transaction; an empty string means none.
        cancellationDateMs = json["cancellation_date_ms"]?.looseInt64 ?? json["cancellation_date"]?.looseInt64
            ?? (json["cancellation_date"]?.looseString.flatMap { $0.isEmpty ? nil : Int64(0) })
        isUpgraded = json["is_upgraded"]?.looseBool ?? false
        // A token that is not a UUID cannot be one an app supplied, so it binds nobody.
        appAccountToken = json["app_account_token"]?.looseString.flatMap { try? SignedTransaction.normalizedUUID($0) }
    }
}

/// The parts of a verifyReceipt answer settle relies on.
///
/// Reads both shapes Apple answers in: an app receipt (iOS 7+, `receipt.bundle_id` and
/// `receipt.in_app`) and an iOS 6-style transaction receipt, where `receipt` is the
/// transaction itself with legacy keys (`bid`, `bvrs`) and `latest_receipt_info` /
/// `latest_expired_receipt_info` are single objects (apple-protocol.md 1.7).
/// https://developer.apple.com/documentation/appstorereceipts/responsebody
package struct ReceiptResponse: Sendable, Equatable {
    package var status: Int
    /// `Production` or `Sandbox` (`AppleEnvironment`'s raw values), kept as the text Apple
    /// sent: a receipt Apple validated is judged by its status, and its environment is
    /// recorded as worded; only `Sandbox` is refused when sandbox is not accepted.
    package var environment: String?
    package var bundleId: String?
    package var hasReceipt: Bool
    /// `is-retryable` as documented, or `is_retryable` as seen on the wire.
    package var isRetryable: Bool?
    /// Every transaction from `receipt.in_app` and `latest_receipt_info`, one per
    /// transaction id (the two lists overlap and come in no guaranteed order).
    package var transactions: [ReceiptTransaction]

    /// Reads an answer; nil when it is not a verifyReceipt answer at all.
    package init?(_ json: JSONValue) {
        guard json.objectMembers != nil, let status = json["status"]?.looseInt64, let small = Int(exactly: status) else {
            return nil
        }
        self.status = small
        environment = json["environment"]?.looseString
        let receipt = json["receipt"]
        hasReceipt = receipt?.objectMembers != nil
        bundleId = receipt?["bundle_id"]?.looseString ?? receipt?["bid"]?.looseString
        isRetryable = json["is-retryable"]?.looseBool ?? json["is_retryable"]?.looseBool
        var merged: [String: ReceiptTransaction] = [:]
        var order: [String] = []
        for entry in Self.entries(json).compactMap(ReceiptTransaction.init) {
            if var existing = merged[entry.transactionId] {
                // A duplicate may carry facts the other lacks (a refund seen only in latest_receipt_info).
                existing.cancellationDateMs = existing.cancellationDateMs ?? entry.cancellationDateMs
                existing.expiresDateMs = existing.expiresDateMs ?? entry.expiresDateMs
                existing.purchaseDateMs = existing.purchaseDateMs ?? entry.purchaseDateMs
                existing.isUpgraded = existing.isUpgraded || entry.isUpgraded
                existing.appAccountToken = existing.appAccountToken ?? entry.appAccountToken
                merged[entry.transactionId] = existing
            } else {
                merged[entry.transactionId] = entry
                order.append(entry.transactionId)
            }
        }
        transactions = order.compactMap { merged[$0] }
    }

    /// The transaction entries of either shape, receipt first.
    private static func entries(_ json: JSONValue) -> [JSONValue] {
        let receipt = json["receipt"]
        var entries = receipt?["in_app"]?.arrayValue ?? []
        // An iOS 6-style receipt is one transaction; an app receipt never has a top-level transaction_id.
        if let receipt, receipt["in_app"] == nil, receipt["transaction_id"] != nil { entries.append(receipt) }
        for key in ["latest_receipt_info", "latest_expired_receipt_info"] {
            switch json[key] {
            case let .array(items)?: entries += items
            case let object? where object.objectMembers != nil: entries.append(object)
            default: break
            }
        }
        return entries
    }
}
