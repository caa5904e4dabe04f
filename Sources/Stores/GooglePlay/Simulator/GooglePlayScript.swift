import Foundation
import SettleBase
import SettleModel
import SettleGooglePlay
import SettleSimulator

/// The `google_play` part of a `settle simulator` plans file: what the fake Google answers,
/// each purchase in Google's own JSON (the answers of `purchases.products.get`,
/// `purchases.subscriptionsv2.get` and the entries of `purchases.voidedpurchases.list`):
///
/// ```json
/// {"google_play": {
///   "products": [{"purchase_token": "tok-1", "purchase": {"purchaseState": 0, "orderId": "GPA.1",
///                 "productId": "gems_100", "purchaseTimeMillis": "1764410645000", "acknowledgementState": 0,
///                 "obfuscatedExternalAccountId": "u-42"}}],
///   "subscriptions": [{"purchase_token": "tok-2", "purchase": {"subscriptionState": "SUBSCRIPTION_STATE_ACTIVE",
///                      "lineItems": [{"productId": "pro_monthly", "latestSuccessfulOrderId": "GPA.2..0"}]}}],
///   "voided": [{"purchaseToken": "tok-1", "orderId": "GPA.1", "voidedTimeMillis": "1764410700000", "voidedQuantity": 1}]
/// }}
/// ```
package struct GooglePlayScript: StoreScript {
    package var products: [(token: String, purchase: ProductPurchase)] = []
    package var subscriptions: [(token: String, purchase: SubscriptionPurchaseV2)] = []
    package var voided: [VoidedPurchase] = []
    /// The plans file's `rate_limit`: requests a second per quota bucket, nil for none.
    package var rateLimit: Double?

    package init(script: SimulatorScript) { rateLimit = script.rateLimit }

    package init(json plans: JSONValue, script: SimulatorScript) throws(SimulatorScript.Failure) {
        self.init(script: script)
        guard let json = plans["google_play"] else { return }
        for (i, entry) in (json["products"]?.arrayValue ?? []).enumerated() {
            guard let token = entry["purchase_token"]?.looseString, PurchaseToken(token) != nil,
                  let purchase = entry["purchase"].flatMap(ProductPurchase.init(json:)) else {
                throw SimulatorScript.Failure(message: "google_play.products[\(i)]: purchase_token (printable ASCII) and purchase (an object) are required")
            }
            products.append((token, purchase))
        }
        for (i, entry) in (json["subscriptions"]?.arrayValue ?? []).enumerated() {
            guard let token = entry["purchase_token"]?.looseString, PurchaseToken(token) != nil,
                  let purchase = entry["purchase"].flatMap(SubscriptionPurchaseV2.init(json:)) else {
                throw SimulatorScript.Failure(message: "google_play.subscriptions[\(i)]: purchase_token (printable ASCII) and purchase (an object) are required")
            }
            subscriptions.append((token, purchase))
        }
        for (i, entry) in (json["voided"]?.arrayValue ?? []).enumerated() {
            guard let purchase = VoidedPurchase(json: entry) else {
                throw SimulatorScript.Failure(message: "google_play.voided[\(i)]: purchaseToken is required")
            }
            voided.append(purchase)
        }
    }

    package func apply(to fake: FakeGooglePlay) {
        for (token, purchase) in products { fake.script(product: token, purchase) }
        for (token, purchase) in subscriptions { fake.script(subscription: token, purchase) }
        if !voided.isEmpty { fake.script(voided: voided, pageSize: 100) }
        if let rateLimit { fake.limit(SimulatedRateLimit(rate: rateLimit, time: fake.time)) }
    }
}

extension SimulatorScript {
    /// What the fake Google answers (nothing but the rate limit unless the script was read
    /// with `GooglePlayScript`).
    package var googlePlay: GooglePlayScript { part(GooglePlayScript.self) }
}
