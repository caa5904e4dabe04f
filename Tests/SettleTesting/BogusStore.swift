import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleEngine

/// A third store that exists only in the tests, as active_merchant's bogus gateway does: a
/// descriptor, a proof kept as data (`StoreProof`: its sale's id), an adapter and a tiny
/// in-process store. It
/// keeps the core honest: every pass, ledger, notification and console test runs with it
/// configured beside the App Store and Google Play, and the core cannot name it.
///
/// It is told of a delivery before an order is finished and refunds what it was not told of
/// within two days (as Google does within three), so the core's deadline machinery serves it too.
extension Store {
    package static let bogus = Store(rawValue: "bogus")
}

package enum BogusStoreModule: StoreModule {
    package static var descriptor: StoreDescriptor {
        StoreDescriptor(store: .bogus, displayName: "Bogus Store", owner: "Bogus", logName: "bogus",
                        unconfiguredHint: "no bogus store is configured", deliveryNotice: .beforeFinished(refundWindowSeconds: 2 * 86_400),
                        publishedRates: ["purchases": 100], configurationKey: "bogus",
                        reasons: ["sale_voided": StoreReasonWords("the bogus shop voided the sale",
                                                                  retryAdvice: "nothing to grant: the shop voided it"),
                                  "refunded": StoreReasonWords("the bogus shop took the money back")])
    }

    /// The shop every reconciler a test builds sells through; a test stocks it.
    package static let shop = BogusShop()

    /// Configured in every test unless its section (`"bogus": {"enabled": false}`) says otherwise.
    package static func adapter(_ context: StoreContext) throws(ConfigError) -> (any StoreAdapter)? {
        guard try enabled(context.configuration) else { return nil }
        return BogusStoreAdapter(shop: shop, products: Set(context.configuration.products.keys), pacer: context.pacer,
                                 ledger: context.ledger)
    }

    /// A table of its own: the sales it confirmed, by the order that holds each (so a test sees
    /// a module's migration applied once, and its code use it, on both engines).
    package static var migrations: [LedgerMigration] {
        [LedgerMigration(name: "bogus.sales_seen",
                         sqlite: "CREATE TABLE bogus_sales_seen (sale TEXT PRIMARY KEY NOT NULL, order_id TEXT NOT NULL, seen_at INTEGER NOT NULL)",
                         postgres: "CREATE TABLE bogus_sales_seen (sale TEXT PRIMARY KEY, order_id TEXT NOT NULL, seen_at BIGINT NOT NULL)",
                         copied: [CopiedTable("bogus_sales_seen", columns: ["sale", "order_id", "seen_at"])])]
    }

    /// The bogus shop voided (refunded) `sale` and says so, as a store's notification does: the
    /// shop's record changes, and the ledger takes it back from the order holding it (a revoke)
    /// or never delivers it to one waiting for it, as every store's refund does.
    @discardableResult
    package static func reportRefund(_ sale: String, ledger: any SettleLedger) throws -> [String: String] {
        shop.refund(sale)
        return try ledger.applyStoreRefund(store: .bogus, grantKey: sale, kind: "SALE_VOIDED", reason: nil,
                                           why: "the bogus shop voided sale \(sale)", source: "bogus refund notice")
    }

    /// `settle enqueue --store bogus --proof-file F`: the file holds the sale's id.
    package static var proofFormat: ProofFormat? {
        ProofFormat(what: "a bogus sale id (letters, digits, '-', at most 64)") { text in
            guard !text.isEmpty, text.count <= 64, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                return .failure(ProofError("a sale id has 1 to 64 letters, digits or '-'"))
            }
            return .success(BogusStoreAdapter.proof(sale: text))
        }
    }

    package static func validate(_ configuration: Configuration) throws(ConfigError) {
        _ = try enabled(configuration)
    }

    private static func enabled(_ configuration: Configuration) throws(ConfigError) -> Bool {
        guard var section = try section(configuration) else { return true }
        let enabled = try section.bool("enabled", default: true)
        try section.rejectUnknownKeys()
        return enabled
    }
}

/// The bogus store's own record of what it sold: purchases by transaction id, whom to, whether
/// it was refunded, whether it was told of the delivery; and an outage switch.
package final class BogusShop: Sendable {
    package struct Sale: Sendable, Equatable {
        package var productId: String
        package var buyer: String
        package var quantity = 1
        package var purchasedAtMs: Int64 = 1_700_000_000_000
        package var refunded = false
        package var acknowledged = false
        /// What the shop says the buyer paid, as its answer carries it (nil: it says nothing).
        package var price: Price? = nil
    }

    private let state = Mutex((sales: [String: Sale](), down: false, verifications: 0, acknowledgements: 0))

    package init() {}

    package func sell(_ transactionId: String, productId: String, to buyer: String, quantity: Int = 1,
                      price: Price? = nil) {
        let sale = Sale(productId: productId, buyer: buyer, quantity: quantity, price: price)
        state.withLock { $0.sales[transactionId] = sale }
    }

    package func refund(_ transactionId: String) { state.withLock { $0.sales[transactionId]?.refunded = true } }
    package func setDown(_ down: Bool) { state.withLock { $0.down = down } }
    package func reset() { state.withLock { $0 = ([:], false, 0, 0) } }
    package func sale(_ transactionId: String) -> Sale? { state.withLock { $0.sales[transactionId] } }
    package var verifications: Int { state.withLock { $0.verifications } }
    package var acknowledgements: Int { state.withLock { $0.acknowledgements } }

    /// What the store says of a transaction: nil when it is down.
    func lookUp(_ transactionId: String) -> Sale?? {
        state.withLock { s in
            s.verifications += 1
            return s.down ? nil : .some(s.sales[transactionId])
        }
    }

    func acknowledge(_ transactionId: String) -> Bool? {
        state.withLock { s in
            guard !s.down else { return nil }
            guard s.sales[transactionId] != nil else { return false }
            s.sales[transactionId]?.acknowledged = true
            s.acknowledgements += 1
            return true
        }
    }
}

/// The bogus store's adapter: its proof is the order's transaction id.
package struct BogusStoreAdapter: StoreAdapter {
    package let shop: BogusShop
    package let products: Set<String>
    package let pacer: Pacer?
    package let ledger: any SettleLedger

    package var store: Store { .bogus }

    /// The orders each sale it confirmed went to, from its own table (`bogus.sales_seen`).
    package static func salesSeen(_ ledger: any SettleLedger) throws -> [String: String] {
        guard try ledger.hasMigration("bogus.sales_seen") else { return [:] }
        return try ledger.reading { db in
            Dictionary(try db.query("SELECT sale, order_id FROM bogus_sales_seen", []).map { ($0.string("sale") ?? "", $0.string("order_id") ?? "") },
                       uniquingKeysWith: { first, _ in first })
        }
    }

    /// The proof of a bogus order: its sale's id, also the key it is found by.
    package static func proof(sale: String) -> StoreProof { StoreProof(kind: "bogus_sale", proof: "sale:" + sale, key: sale) }

    package func verify(_ order: Order) throws -> Verification {
        guard case let .module(proof)? = order.proof, proof.kind == "bogus_sale", proof.proof.hasPrefix("sale:") else {
            return Verification(outcome: .needsAttention(reason: .proofMissing, detail: "a bogus store order needs its sale's proof"))
        }
        let transactionId = String(proof.proof.dropFirst("sale:".count))
        guard products.contains(order.productId) else {
            return Verification(outcome: .needsAttention(reason: .unknownProduct, detail: "product \(order.productId) is not configured"))
        }
        guard let answer = shop.lookUp(transactionId) else {
            return Verification(outcome: .storeUnavailable("the bogus store is down", retryAfter: nil))
        }
        var verification = Verification(outcome: .retry(""), environment: "production", storeAnswered: true)
        guard let sale = answer else {
            verification.outcome = .rejected(reason: .transactionNotFound, detail: "the bogus store sold no \(transactionId)")
            return verification
        }
        if sale.refunded {
            verification.outcome = .rejected(reason: .refunded, detail: "the bogus store refunded \(transactionId)")
        } else if sale.productId != order.productId {
            verification.outcome = .rejected(reason: .productMismatch, detail: "\(transactionId) is \(sale.productId)")
        } else if sale.buyer != order.userId {
            verification.outcome = .rejected(reason: .userMismatch, detail: "\(transactionId) was bought by another account")
        } else {
            let now = ledger.time.unixSeconds
            try ledger.writing { db in
                try db.query("INSERT INTO bogus_sales_seen(sale, order_id, seen_at) VALUES (?, ?, ?) ON CONFLICT (sale) DO NOTHING",
                             [.text(transactionId), .text(order.orderId), .integer(now)])
            }
            var purchase = VerifiedPurchase(
                transactionId: transactionId, originalTransactionId: transactionId, productId: sale.productId,
                environment: "production", quantity: sale.quantity, purchaseDateMs: sale.purchasedAtMs,
                expiresDateMs: nil)
            purchase.price = sale.price
            verification.outcome = .verified(.only(purchase))
        }
        return verification
    }

    package var finisher: (any StoreFinisher)? { BogusFinisher(shop: shop) }
}

/// Tells the bogus store an order was delivered.
struct BogusFinisher: StoreFinisher {
    let shop: BogusShop

    func finish(_ order: Order) -> StoreFinishOutcome {
        guard let transactionId = order.verified?.transactionId ?? order.storeProof?.key else {
            return .refused("no transaction to acknowledge")
        }
        switch shop.acknowledge(transactionId) {
        case nil: return .failed("the bogus store is down", configuration: false)
        case false?: return .refused("the bogus store does not know \(transactionId)")
        case true?: return .finished("acknowledged")
        }
    }
}
