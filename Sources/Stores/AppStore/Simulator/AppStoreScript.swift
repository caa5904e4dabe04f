import Foundation
import SettleBase
import SettleSimulator

/// The App Store's part of a `settle simulator` plans file, so integrators can test their hook
/// and backend against scripted Apple answers:
///
/// ```json
/// {
///   "receipts": [{"receipt_data": "<base64 exactly as sent>", "bundle_id": "com.example.game",
///                 "environment": "Production",
///                 "in_app": [{"product_id": "coins", "transaction_id": "1000", "purchase_date_ms": 1764410645000}],
///                 "answers": [{"status": 21005}, {"http": 503}, "receipt"]}],
///   "transactions": [{"transaction_id": "2000", "product_id": "coins", "environment": "Sandbox",
///                     "app_account_token": "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b",
///                     "price": 4990, "currency": "USD",
///                     "answers": ["not_found", {"http": 500, "error_code": 5000001}, "transaction"]}],
///   "customers": [["2000", "2001"]],
///   "apple_orders": {"MQ5Q8W3X2Z": ["2000"]},
///   "rate_limit": 200
/// }
/// ```
///
/// `rate_limit` (`SimulatorScript`): each Server API endpoint group answers 429 past it.
///
/// Receipt answers: `"receipt"` (answer from the receipt), `{"status": N}`, `{"http": N}`,
/// `"garbage"`. Transaction answers: `"transaction"`, `"not_found"`, `"unauthorized"`,
/// `{"http": N, "error_code": M}`, `{"rate_limited": "<Retry-After>"}`. Every answer is used
/// once, in order; then the normal answer for ever.
package struct AppStoreScript: StoreScript {
    package typealias Failure = SimulatorScript.Failure

    package var receipts: [(receiptData: String, script: ReceiptScript)] = []
    package var transactions: [TransactionScript] = []
    package var customers: [[SimulatedSignedTransaction]] = []
    package var appleOrders: [(String, [SimulatedSignedTransaction])] = []
    /// The plans file's `rate_limit`: requests a second per endpoint group, nil for none.
    package var rateLimit: Double?

    package init(script: SimulatorScript) { rateLimit = script.rateLimit }

    package init(json: JSONValue, script: SimulatorScript) throws(Failure) {
        self.init(script: script)
        let bundleId = script.bundleId
        for (i, entry) in (json["receipts"]?.arrayValue ?? []).enumerated() {
            let at = "receipts[\(i)]"
            guard let data = entry["receipt_data"]?.looseString, !data.isEmpty else { throw Failure(message: "\(at).receipt_data: required") }
            let inApp = try (entry["in_app"]?.arrayValue ?? []).enumerated().map { (j, t) throws(Failure) in
                try Self.receiptTransaction(t, at: "\(at).in_app[\(j)]")
            }
            let receipt = SimulatedReceipt(bundleId: entry["bundle_id"]?.looseString ?? bundleId,
                                           environment: entry["environment"]?.looseString ?? "Production", inApp: inApp)
            let answers = try (entry["answers"]?.arrayValue ?? []).enumerated().map { (j, a) throws(Failure) in
                try Self.receiptAnswer(a, at: "\(at).answers[\(j)]")
            }
            receipts.append((data, ReceiptScript(receipt: receipt, answers: answers)))
        }
        var byId: [String: SimulatedSignedTransaction] = [:]
        for (i, entry) in (json["transactions"]?.arrayValue ?? []).enumerated() {
            let at = "transactions[\(i)]"
            guard let id = entry["transaction_id"]?.looseString, let product = entry["product_id"]?.looseString else {
                throw Failure(message: "\(at): transaction_id and product_id are required")
            }
            let purchased = entry["purchase_date_ms"]?.looseInt64 ?? 1_764_410_645_000
            var transaction = SimulatedSignedTransaction(
                transactionId: id, originalTransactionId: entry["original_transaction_id"]?.looseString, productId: product,
                bundleId: entry["bundle_id"]?.looseString ?? bundleId, environment: entry["environment"]?.looseString ?? "Production",
                purchaseDateMs: purchased, quantity: Int(entry["quantity"]?.looseInt64 ?? 1),
                revocationDateMs: entry["revoked"]?.looseBool == true ? purchased + 60_000 : nil,
                appAccountToken: entry["app_account_token"]?.looseString, isUpgraded: entry["is_upgraded"]?.looseBool ?? false)
            // Sent as written (Apple: `price` in milliunits, `currency` ISO 4217), absurd values included.
            (transaction.price, transaction.currency) = (entry["price"], entry["currency"])
            let answers = try (entry["answers"]?.arrayValue ?? []).enumerated().map { (j, a) throws(Failure) in
                try Self.serverAnswer(a, at: "\(at).answers[\(j)]")
            }
            byId[id] = transaction
            transactions.append(TransactionScript(transaction: transaction, answers: answers))
        }
        func resolve(_ ids: [JSONValue], at: String) throws(Failure) -> [SimulatedSignedTransaction] {
            var found: [SimulatedSignedTransaction] = []
            for id in ids {
                guard let text = id.looseString, let t = byId[text] else {
                    throw Failure(message: "\(at): \(id.looseString ?? "?") is not one of the script's transactions")
                }
                found.append(t)
            }
            return found
        }
        for (i, ids) in (json["customers"]?.arrayValue ?? []).enumerated() {
            customers.append(try resolve(ids.arrayValue ?? [], at: "customers[\(i)]"))
        }
        for (orderId, ids) in json["apple_orders"]?.objectMembers ?? [] {
            appleOrders.append((orderId, try resolve(ids.arrayValue ?? [], at: "apple_orders.\(orderId)")))
        }
    }

    /// Loads everything into `simulator`.
    package func apply(to simulator: AppleSimulator) {
        for (data, script) in receipts { simulator.script(data, script) }
        for script in transactions {
            if let id = script.transaction?.transactionId { simulator.script(transaction: id, script) }
        }
        for customer in customers { simulator.script(customer: customer) }
        for (orderId, purchases) in appleOrders { simulator.script(appleOrder: orderId, purchases) }
        if let rateLimit { simulator.limit(SimulatedRateLimit(rate: rateLimit, time: simulator.core.time)) }
    }

    private static func receiptTransaction(_ t: JSONValue, at: String) throws(Failure) -> SimulatedTransaction {
        guard let product = t["product_id"]?.looseString, let id = t["transaction_id"]?.looseString else {
            throw Failure(message: "\(at): product_id and transaction_id are required")
        }
        return SimulatedTransaction(productId: product, transactionId: id, originalTransactionId: t["original_transaction_id"]?.looseString,
                                    purchaseDateMs: t["purchase_date_ms"]?.looseInt64 ?? 1_764_410_645_000,
                                    quantity: Int(t["quantity"]?.looseInt64 ?? 1), cancellationDateMs: t["cancellation_date_ms"]?.looseInt64,
                                    expiresDateMs: t["expires_date_ms"]?.looseInt64, isUpgraded: t["is_upgraded"]?.looseBool ?? false,
                                    appAccountToken: t["app_account_token"]?.looseString)
    }

    private static func receiptAnswer(_ a: JSONValue, at: String) throws(Failure) -> SimulatedAnswer {
        switch a {
        case .string("receipt"): return .receipt
        case .string("garbage"): return .garbage
        default:
            if let status = a["status"]?.looseInt64 { return .status(Int(status), retryable: a["is_retryable"]?.looseBool) }
            if let code = a["http"]?.looseInt64 { return .http(Int(code), retryAfter: a["retry_after"]?.looseString) }
            throw Failure(message: "\(at): expected \"receipt\", \"garbage\", {\"status\": N} or {\"http\": N}")
        }
    }

    private static func serverAnswer(_ a: JSONValue, at: String) throws(Failure) -> SimulatedServerAnswer {
        switch a {
        case .string("transaction"): return .transaction
        case .string("not_found"): return .notFound
        case .string("unauthorized"): return .unauthorized
        default:
            if let retryAfter = a["rate_limited"]?.looseString { return .rateLimited(retryAfter: retryAfter) }
            if let code = a["http"]?.looseInt64 { return .error(status: Int(code), code: Int(a["error_code"]?.looseInt64 ?? 0)) }
            throw Failure(message: "\(at): expected \"transaction\", \"not_found\", \"unauthorized\", {\"http\": N, \"error_code\": M} or {\"rate_limited\": \"S\"}")
        }
    }
}

extension SimulatorScript {
    /// Loads the App Store's part into `simulator` (nothing but the rate limit unless the
    /// script was read with `AppStoreScript`).
    package func apply(to simulator: AppleSimulator) { part(AppStoreScript.self).apply(to: simulator) }
}
