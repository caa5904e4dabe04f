import SettleBase
import SettleSimulator

/// The `one_store` part of a `settle simulator` plans file: purchases, each with its product,
/// token, purchase id, and optionally its host (`commercial`, `sandbox`) and market code:
///
/// ```json
/// {"one_store": {"purchases": [{"productId": "gems_100", "purchaseToken": "tok-1", "purchaseId": "1700000000001",
///                               "purchaseTime": 1764410645000, "developerPayload": "u-42", "market": "MKT_ONE"}]}}
/// ```
package struct OneStoreScript: StoreScript {
    package var purchases: [FakeOneStore.Purchase] = []

    package init(script: SimulatorScript) {}

    package init(json plans: JSONValue, script: SimulatorScript) throws(SimulatorScript.Failure) {
        guard let json = plans["one_store"] else { return }
        for (i, entry) in (json["purchases"]?.arrayValue ?? []).enumerated() {
            guard let product = entry["productId"]?.looseString, let token = entry["purchaseToken"]?.looseString,
                let id = entry["purchaseId"]?.looseString
            else {
                throw SimulatorScript.Failure(
                    message: "one_store.purchases[\(i)]: productId, purchaseToken and purchaseId are required")
            }
            purchases.append(
                FakeOneStore.Purchase(
                    host: entry["host"]?.looseString ?? "commercial", market: entry["market"]?.looseString ?? "MKT_ONE",
                    productId: product, token: token, purchaseId: id,
                    purchaseTimeMs: entry["purchaseTime"]?.looseInt64 ?? 0,
                    developerPayload: entry["developerPayload"]?.looseString,
                    quantity: Int(entry["quantity"]?.looseInt64 ?? 1)))
        }
    }

    package func apply(to fake: FakeOneStore) { purchases.forEach(fake.script) }
}

extension SimulatorScript {
    package var oneStore: OneStoreScript { part(OneStoreScript.self) }
}
