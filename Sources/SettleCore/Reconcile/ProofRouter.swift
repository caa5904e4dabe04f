/// Sends each order to the verifier its proof of purchase needs, and rejects what no Apple
/// answer could make grantable (a product the configuration does not know) without asking.
public struct ProofRouter: OrderVerifier {
    public var receipts: ReceiptVerifier?
    public var products: Set<String>

    public init(receipts: ReceiptVerifier?, products: Set<String>) {
        self.receipts = receipts
        self.products = products
    }

    public func verify(_ order: Order, grantHolder: (String) throws -> String?) throws -> Verification {
        guard products.contains(order.productId) else {
            return Verification(outcome: .rejected(reason: .unknownProduct,
                                                   detail: "product \(order.productId) is not in the configuration's products"))
        }
        if order.receiptSHA256 != nil {
            guard let receipts else {
                return Verification(outcome: .configurationFault("the order has an app receipt but receipt_api is not configured"))
            }
            return try receipts.verify(order, grantHolder: grantHolder)
        }
        return Verification(outcome: .retry(
            "the order has no app receipt; verifying StoreKit 2 signed transactions and bare transaction ids needs the App Store Server API, which this settle does not support yet"))
    }
}
