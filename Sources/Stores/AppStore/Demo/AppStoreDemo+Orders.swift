import Foundation
import SettleBase
import SettleModel
import SettleAppStoreSimulator

extension AppStoreDemo {
    /// Scripts the simulator and returns the orders to enqueue, one of every kind.
    package func orders(now: Date) throws -> [NewOrder] {
        let ms = Int64(now.timeIntervalSince1970 * 1000) - 600_000
        func receipt(_ name: String) -> String { Data("demo receipt \(name)".utf8).base64EncodedString() }
        let coins = "com.example.game.coins100", premium = "com.example.game.premium"
        let valid = receipt("valid"), sandbox = receipt("sandbox"), refunded = receipt("refunded")
        let forged = receipt("forged"), outage = receipt("outage")
        simulator.script(valid, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, inApp: [
            SimulatedTransaction(productId: coins, transactionId: "2000000100000001", purchaseDateMs: ms)])))
        simulator.script(sandbox, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, environment: "Sandbox", inApp: [
            SimulatedTransaction(productId: premium, transactionId: "2000000100000002", purchaseDateMs: ms)])))
        simulator.script(refunded, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, inApp: [
            SimulatedTransaction(productId: coins, transactionId: "2000000100000003", purchaseDateMs: ms,
                                 cancellationDateMs: ms + 60_000)])))
        simulator.script(forged, .forged)
        simulator.script(outage, ReceiptScript(receipt: SimulatedReceipt(bundleId: bundleId, inApp: [
            SimulatedTransaction(productId: coins, transactionId: "2000000100000005", purchaseDateMs: ms)]),
                                               answers: [.status(21005)]))
        // Apple's Server API knows that purchase too: Finish Transaction finds it once it is delivered.
        simulator.script(transaction: "2000000100000005", TransactionScript(transaction: SimulatedSignedTransaction(
            transactionId: "2000000100000005", productId: coins, bundleId: bundleId, purchaseDateMs: ms)))
        // StoreKit 2: a device's signed transaction, a forged one, a bare sandbox transaction id
        // bound to its buyer by appAccountToken, and the same id claimed by a stranger.
        let buyerToken = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
        let signed = SimulatedSignedTransaction(transactionId: "2000000200000001", productId: premium, bundleId: bundleId,
                                                purchaseDateMs: ms, type: "Non-Consumable")
        var sandboxOnly = SimulatedSignedTransaction(transactionId: "2000000200000002", productId: coins, bundleId: bundleId,
                                                     environment: "Sandbox", purchaseDateMs: ms)
        sandboxOnly.appAccountToken = buyerToken
        simulator.script(transaction: signed.transactionId, TransactionScript(transaction: signed))
        simulator.script(transaction: sandboxOnly.transactionId, TransactionScript(transaction: sandboxOnly))
        let signedToken = try signed.signed(at: ms + 1000)
        var forgedPayload = signed.payload(signedAt: ms + 1000)
        if case var .object(members) = forgedPayload, let i = members.firstIndex(where: { $0.0 == "quantity" }) {
            members[i].1 = .number(50)
            forgedPayload = .object(members)
        }
        let parts = signedToken.split(separator: ".")
        let forgedToken = "\(parts[0]).\(Base64URL.encode(forgedPayload.data)).\(parts[2])"
        return [
            NewOrder(orderId: "o-2001", userId: "u-50", productId: premium, signedTransaction: signedToken),
            NewOrder(orderId: "o-2002", userId: "u-51", productId: coins, transactionId: sandboxOnly.transactionId,
                     appAccountToken: buyerToken),
            NewOrder(orderId: "o-2004", userId: "u-66", productId: coins, transactionId: sandboxOnly.transactionId,
                     appAccountToken: "0d9c8b7a-6f5e-4d3c-8b2a-19f8e7d6c5b4"),
            NewOrder(orderId: "o-2003", userId: "u-52", productId: premium, signedTransaction: forgedToken),
            NewOrder(orderId: "o-1001", userId: "u-42", productId: coins, transactionId: "2000000100000001", receipt: valid),
            NewOrder(orderId: "o-1002", userId: "u-43", productId: premium, receipt: sandbox),
            NewOrder(orderId: "o-1003", userId: "u-44", productId: coins, transactionId: "2000000100000003", receipt: refunded),
            NewOrder(orderId: "o-1004", userId: "u-45", productId: coins, receipt: forged),
            NewOrder(orderId: "o-1005", userId: "u-46", productId: coins, transactionId: "2000000100000005", receipt: outage),
            NewOrder(orderId: "o-1006", userId: "u-47", productId: coins, transactionId: "2000000100000001", receipt: valid),
        ]
    }
}
