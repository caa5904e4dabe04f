import SettleBase

/// A purchase inside a simulated receipt.
package struct SimulatedTransaction: Sendable, Equatable {
    package var productId: String
    package var transactionId: String
    package var originalTransactionId: String?
    package var purchaseDateMs: Int64
    package var quantity: Int
    package var cancellationDateMs: Int64?
    package var expiresDateMs: Int64?
    /// Send the ids as JSON numbers, as Apple has been seen to do.
    package var idsAsNumbers: Bool
    /// Sent as `is_upgraded: "true"` (Apple omits the key otherwise).
    package var isUpgraded: Bool
    /// Sent as `app_account_token`, exactly as given.
    package var appAccountToken: String?

    package init(productId: String, transactionId: String, originalTransactionId: String? = nil,
                purchaseDateMs: Int64 = 1_764_410_645_000, quantity: Int = 1, cancellationDateMs: Int64? = nil,
                expiresDateMs: Int64? = nil, idsAsNumbers: Bool = false, isUpgraded: Bool = false, appAccountToken: String? = nil) {
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.purchaseDateMs = purchaseDateMs
        self.quantity = quantity
        self.cancellationDateMs = cancellationDateMs
        self.expiresDateMs = expiresDateMs
        self.idsAsNumbers = idsAsNumbers
        self.isUpgraded = isUpgraded
        self.appAccountToken = appAccountToken
    }

    /// The entry as verifyReceipt sends it: every value a string, dates in three forms.
    package func json() -> JSONValue {
        func id(_ value: String) -> JSONValue { idsAsNumbers && Int64(value) != nil ? .number(value) : .string(value) }
        var members: [(String, JSONValue)] = [
            ("quantity", .string(String(quantity))),
            ("product_id", .string(productId)),
            ("transaction_id", id(transactionId)),
            ("original_transaction_id", id(originalTransactionId ?? transactionId)),
            ("purchase_date", .string(Self.appleDate(purchaseDateMs))),
            ("purchase_date_ms", .string(String(purchaseDateMs))),
            ("purchase_date_pst", .string(Self.appleDate(purchaseDateMs, zone: "America/Los_Angeles"))),
            ("is_trial_period", .string("false")),
            ("in_app_ownership_type", .string("PURCHASED")),
        ]
        if let expires = expiresDateMs {
            members.append(("expires_date", .string(Self.appleDate(expires))))
            members.append(("expires_date_ms", .string(String(expires))))
        }
        if let cancelled = cancellationDateMs {
            members.append(("cancellation_date", .string(Self.appleDate(cancelled))))
            members.append(("cancellation_date_ms", .string(String(cancelled))))
            members.append(("cancellation_reason", .string("0")))
        }
        if isUpgraded { members.append(("is_upgraded", .string("true"))) }
        if let token = appAccountToken { members.append(("app_account_token", .string(token))) }
        return .object(members)
    }

    /// The transaction as an iOS 6-style answer spells it (apple-protocol.md 1.7): legacy keys,
    /// the bundle as `bid`, and `expires_date` in milliseconds.
    package func legacyJSON(bundleId: String) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("bid", .string(bundleId)),
            ("bvrs", .string("42")),
            ("item_id", .string("521129812")),
            ("quantity", .string(String(quantity))),
            ("product_id", .string(productId)),
            ("transaction_id", .string(transactionId)),
            ("original_transaction_id", .string(originalTransactionId ?? transactionId)),
            ("purchase_date", .string(Self.appleDate(purchaseDateMs))),
            ("purchase_date_ms", .string(String(purchaseDateMs))),
            ("original_purchase_date_ms", .string(String(purchaseDateMs))),
            ("unique_identifier", .string("0000b01147b8")),
        ]
        if let expires = expiresDateMs {
            members.append(("expires_date", .string(String(expires))))
            members.append(("expires_date_formatted", .string(Self.appleDate(expires))))
        }
        if let cancelled = cancellationDateMs { members.append(("cancellation_date", .string(String(cancelled)))) }
        return .object(members)
    }

    package static func appleDate(_ ms: Int64, zone: String = "Etc/GMT") -> String {
        let iso = Timestamp.rfc3339(milliseconds: ms)
        return iso.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " \(zone)")
    }
}

/// An app receipt as Apple would decode it.
package struct SimulatedReceipt: Sendable, Equatable {
    package var bundleId: String
    /// `Production` or `Sandbox`: where the receipt really comes from.
    package var environment: String
    package var inApp: [SimulatedTransaction]
    /// Repeats transactions of `inApp` and adds others, as Apple's answer does.
    package var latestReceiptInfo: [SimulatedTransaction]

    package init(bundleId: String, environment: String = "Production", inApp: [SimulatedTransaction],
                latestReceiptInfo: [SimulatedTransaction] = []) {
        self.bundleId = bundleId
        self.environment = environment
        self.inApp = inApp
        self.latestReceiptInfo = latestReceiptInfo
    }
}

/// How the simulator answers one request for a receipt.
package enum SimulatedAnswer: Sendable, Equatable {
    /// What Apple would say for the receipt: status 0, or 21007/21008 at the wrong endpoint.
    case receipt
    /// A bare status, with `is-retryable` (or its `is_retryable` twin) when given.
    case status(Int, retryable: Bool? = nil, underscoreSpelling: Bool = false)
    /// An HTTP error status with a small HTML body, as a load balancer sends.
    case http(Int, retryAfter: String? = nil)
    /// A 200 whose body is not JSON.
    case garbage
    /// Wait this long, then answer normally (to exceed the client's timeout).
    case slow(seconds: Double)
    /// A 200 whose body is this many bytes of valid-looking JSON.
    case huge(bytes: Int)
    /// An iOS 6-style transaction receipt answer with this status (0, or 21006 for an expired
    /// subscription): `receipt` is the first `inApp` transaction in legacy keys, and the last
    /// `latestReceiptInfo` entry comes as a single object, `latest_expired_receipt_info` under 21006.
    case transactionReceipt(status: Int)
}

/// What the simulator does with one receipt: `answers` are used one per request, then the
/// receipt is answered normally for ever.
package struct ReceiptScript: Sendable, Equatable {
    package var receipt: SimulatedReceipt?
    package var answers: [SimulatedAnswer]

    package init(receipt: SimulatedReceipt?, answers: [SimulatedAnswer] = []) {
        self.receipt = receipt
        self.answers = answers
    }

    /// A receipt Apple cannot authenticate.
    package static let forged = ReceiptScript(receipt: nil, answers: [])
}
