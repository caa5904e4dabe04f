import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStoreModule
import SettleAppStoreSimulator

/// The demo's third act: a family member's copy of a shared purchase, which never carries the
/// member's token (at most the buyer's), bound to the member by their Apple Account's
/// `appTransactionId` once their signed AppTransaction linked it (`settle link`).
extension AppStoreDemo {
    func showAppleAccounts(_ stage: DemoStage) throws {
        let (ledger, reconciler, time) = (stage.ledger, stage.reconciler, stage.time)
        guard let inbox = reconciler.inbox else { return }
        let nowMs = time.unixSeconds * 1000
        stage.print("\nA family member: user u-77's app sends its signed AppTransaction (settle link --user u-77 ...)")
        let member = try SimulatedAppTransaction(appTransactionId: "704289572311", bundleId: bundleId).signed(at: nowMs)
        guard case let .success(app) = inbox.verifier.verifyAppTransaction(member, now: time.now) else { return }
        try ledger.linkAppTransaction(app, userId: "u-77", source: "link", orderId: nil)
        stage.print("linked appTransactionId \(app.appTransactionId) to user u-77")
        // u-51 bought premium and shares it with the family: the member's copy carries u-51's token.
        var shared = SimulatedSignedTransaction(transactionId: "2000000400000001", productId: "com.example.game.premium",
                                                bundleId: bundleId, purchaseDateMs: nowMs - 60_000, type: "Non-Consumable",
                                                appAccountToken: "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b")
        shared.appTransactionId = app.appTransactionId
        shared.inAppOwnershipType = "FAMILY_SHARED"
        simulator.script(transaction: shared.transactionId, TransactionScript(transaction: shared))
        let notification = try SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: shared, bundleId: bundleId,
                                                     signedDateMs: nowMs).signed()
        if case let .stored(result) = inbox.receive(signedPayload: notification, source: "endpoint") {
            stage.print("ONE_TIME_CHARGE for \(shared.transactionId) (FAMILY_SHARED, carrying the buyer's token): \(result.outcome)")
        }
        let pass = try reconciler.runPass()
        stage.print("pass 5: \(pass.summaryLine)")
        if let order = try ledger.orderRecord("apple-\(shared.transactionId)")?.order {
            stage.print("apple-\(shared.transactionId): \(order.state.rawValue) for user \(order.userId) (the member, never the buyer)")
        }
    }
}
