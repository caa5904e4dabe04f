import SettleBase

/// A refund review Huawei asks the developer to decide (`REFUND_REQUEST`, section 1.9): which
/// purchase orders, for how much, and the batch the answer names.
package struct HuaweiRefundRequest: Sendable, Equatable {
    package struct Order: Sendable, Equatable {
        package var purchaseOrderId: String
        /// What was paid, in fen.
        package var payAmount: Int64
    }

    package var refundBatchNo: String
    package var reason: String?
    /// What the customer asks back, in fen.
    package var applyAmount: Int64?
    package var currency: String?
    package var orders: [Order]

    package init?(notification json: JSONValue) {
        let data = json["notificationMetaData"]?["refundRequestData"] ?? .null
        guard let batch = data["refundBatchNo"]?.looseString, !batch.isEmpty,
            let list = data["refundOrders"]?.arrayValue, !list.isEmpty
        else {
            return nil
        }
        var orders: [Order] = []
        for entry in list {
            guard let id = entry["purchaseOrderId"]?.looseString, !id.isEmpty,
                let paid = entry["payAmount"]?.looseInt64, paid >= 0,
                paid < 1_000_000_000_000
            else { return nil }
            orders.append(Order(purchaseOrderId: id, payAmount: paid))
        }
        refundBatchNo = batch
        reason = data["refundReason"]?.looseString
        applyAmount = data["applyAmount"]?.looseInt64
        currency = data["currency"]?.looseString
        self.orders = orders
    }

    /// The review result's body (`/post-sales/harmony/v1/transactions/refund/result`): approve
    /// refunds each order what it paid; reject refunds nothing, with a remark. Consumption is not
    /// sent: settle does not know it.
    package func answer(approve: Bool, remark: String, applicationId: String, nowMs: Int64) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("reviewType", .number(approve ? 1 : 2)), ("refundBatchNo", .string(refundBatchNo)),
            ("notifyTime", .number(nowMs)),
            ("applicationId", .string(applicationId)), ("remark", .string(String(remark.prefix(200)))),
        ]
        if approve {
            members.append(("totalRefundAmount", .number(orders.reduce(Int64(0)) { $0 + $1.payAmount })))
            members.append(("currency", .string(currency ?? "CNY")))
        }
        members.append(
            (
                "reviewResultList",
                .array(
                    orders.map { order in
                        .object([
                            ("purchaseOrderId", .string(order.purchaseOrderId)), ("payMoney", .number(order.payAmount)),
                            ("refundMoney", .number(approve ? order.payAmount : 0)),
                        ])
                    })
            ))
        return .object(members)
    }
}
