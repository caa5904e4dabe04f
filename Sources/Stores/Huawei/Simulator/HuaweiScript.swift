import SettleBase
import SettleSimulator

/// The `huawei` part of a `settle simulator` plans file: IAP Kit's purchase orders in Huawei's
/// own shape (PurchaseOrderPayload), and subscriptions as their orders (the last one is the
/// current period) with a status:
///
/// ```json
/// {"huawei": {
///   "orders": [{"purchaseOrderId": "1701.A.1", "purchaseToken": "tok-1", "productId": "coins_500",
///               "productType": "0", "purchaseTime": 1764410645000, "developerPayload": "u-42"}],
///   "subscriptions": [{"subscriptionId": "1701.S.1", "purchaseToken": "tok-2", "status": "1",
///                      "expiresTime": 1767002645000,
///                      "orders": [{"purchaseOrderId": "1701.S.1.0", "productId": "pro_monthly", "productType": "2",
///                                  "purchaseTime": 1764410645000}]}]
/// }}
/// ```
///
/// An order's `applicationId` defaults to the simulated app, `environment` to `NORMAL`,
/// `signedTime` to its `purchaseTime`; a subscription's orders take its token and id.
package struct HuaweiScript: StoreScript {
    package var orders: [JSONValue] = []
    package var subscriptions: [FakeHuawei.Subscription] = []
    /// HMS IAP purchases, as InAppPurchaseData (`hms_purchases`).
    package var hmsPurchases: [JSONValue] = []

    package init(script: SimulatorScript) {}

    package init(json plans: JSONValue, script: SimulatorScript) throws(SimulatorScript.Failure) {
        guard let json = plans["huawei"] else { return }
        for (i, entry) in (json["orders"]?.arrayValue ?? []).enumerated() {
            guard entry["purchaseOrderId"]?.looseString != nil, entry["purchaseToken"]?.looseString != nil,
                entry["productId"]?.looseString != nil
            else {
                throw SimulatorScript.Failure(
                    message: "huawei.orders[\(i)]: purchaseOrderId, purchaseToken and productId are required")
            }
            orders.append(entry)
        }
        for (i, entry) in (json["subscriptions"]?.arrayValue ?? []).enumerated() {
            guard let id = entry["subscriptionId"]?.looseString, let token = entry["purchaseToken"]?.looseString,
                let list = entry["orders"]?.arrayValue, !list.isEmpty,
                list.allSatisfy({ $0["purchaseOrderId"]?.looseString != nil && $0["productId"]?.looseString != nil })
            else {
                throw SimulatorScript.Failure(
                    message: "huawei.subscriptions[\(i)]: subscriptionId, purchaseToken and orders "
                        + "(each with purchaseOrderId and productId) are required")
            }
            let orders = list.map {
                FakeHuawei.setting($0, [("purchaseToken", .string(token)), ("subscriptionId", .string(id))])
            }
            subscriptions.append(
                FakeHuawei.Subscription(
                    subscriptionId: id, purchaseToken: token,
                    status: entry["status"]?.looseString ?? "1",
                    expiresTimeMs: entry["expiresTime"]?.looseInt64 ?? 0, orders: orders))
        }
        for (i, entry) in (json["hms_purchases"]?.arrayValue ?? []).enumerated() {
            guard entry["purchaseToken"]?.looseString != nil, entry["productId"]?.looseString != nil,
                entry["orderId"]?.looseString != nil
            else {
                throw SimulatorScript.Failure(
                    message: "huawei.hms_purchases[\(i)]: purchaseToken, productId and orderId are required")
            }
            hmsPurchases.append(entry)
        }
    }

    package func apply(to hms: FakeHMS) {
        for purchase in hmsPurchases { hms.script(purchase: purchase) }
    }

    package func apply(to fake: FakeHuawei) {
        for order in orders { fake.script(order: Self.completed(order, appId: fake.appId)) }
        for var subscription in subscriptions {
            subscription.orders = subscription.orders.map { Self.completed($0, appId: fake.appId) }
            fake.script(subscription: subscription)
        }
    }

    /// Huawei's defaults for what an entry leaves out.
    package static func completed(_ order: JSONValue, appId: String) -> JSONValue {
        var defaults: [(String, JSONValue)] = []
        if order["applicationId"] == nil { defaults.append(("applicationId", .string(appId))) }
        if order["environment"] == nil { defaults.append(("environment", .string("NORMAL"))) }
        if order["productType"] == nil { defaults.append(("productType", .string("0"))) }
        if order["signedTime"] == nil, let time = order["purchaseTime"] { defaults.append(("signedTime", time)) }
        return FakeHuawei.setting(order, defaults)
    }
}

extension SimulatorScript {
    /// The plans file's `huawei` part.
    package var huawei: HuaweiScript { part(HuaweiScript.self) }
}
