import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStoreModule
import SettleAppStoreSimulator

/// The demo's second act: Apple tells settle (App Store Server Notifications V2 to a real
/// endpoint on loopback) of a purchase no backend enqueued, of a refund, and of a refund request.
extension AppStoreDemo {
    func showNotifications(_ stage: DemoStage) throws {
        let (ledger, reconciler, time, folder) = (stage.ledger, stage.reconciler, stage.time, stage.folder)
        guard let inbox = reconciler.inbox else { return }
        let endpoint: NotificationEndpoint
        do {
            endpoint = try NotificationEndpoint(address: "127.0.0.1:0", path: "/apple/notifications/v2", limits: .init(),
                                                log: Log(environment: [:], time: time, sink: { _ in })) { body in inbox.answer(body).response }
        } catch {
            throw DemoFailure(.unavailable, "cannot start the demo's notifications endpoint on 127.0.0.1: \(error)")
        }
        defer { endpoint.stop() }
        let url = "http://127.0.0.1:\(endpoint.port)/apple/notifications/v2"
        stage.print("\nApple tells settle: App Store Server Notifications V2 posted to \(url)\n")
        let nowMs = time.unixSeconds * 1000
        // A purchase the app never reported (it was killed first); its token is user u-51's (order o-2002).
        let lost = SimulatedSignedTransaction(transactionId: "2000000300000001", productId: "com.example.game.coins100", bundleId: bundleId,
                                              purchaseDateMs: nowMs - 60_000, appAccountToken: "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b")
        simulator.script(transaction: lost.transactionId, TransactionScript(transaction: lost))
        let purchase = SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: lost, bundleId: bundleId, signedDateMs: nowMs)
        stage.print("ONE_TIME_CHARGE for \(lost.transactionId), never enqueued: HTTP \(try simulator.send(purchase, to: url).map(String.init) ?? "-")")
        // o-1001 was delivered in pass 1; Apple now refunds half of it (a prorated refund).
        var delivered = SimulatedSignedTransaction(transactionId: "2000000100000001", productId: "com.example.game.coins100",
                                                   bundleId: bundleId, purchaseDateMs: nowMs - 3_600_000, revocationDateMs: nowMs)
        delivered.revocationType = "REFUND_PRORATED"
        delivered.revocationPercentage = 50_000
        let refund = SimulatedNotification(type: "REFUND", transaction: delivered, bundleId: bundleId, signedDateMs: nowMs)
        stage.print("REFUND (REFUND_PRORATED, 50 %) of \(delivered.transactionId) (order o-1001, delivered): HTTP \(try simulator.send(refund, to: url).map(String.init) ?? "-")")
        let request = SimulatedNotification(type: "CONSUMPTION_REQUEST", transaction: lost, bundleId: bundleId,
                                            consumptionRequestReason: "UNINTENDED_PURCHASE", signedDateMs: nowMs)
        let third = try reconciler.runPass()
        stage.print("pass 3: \(third.summaryLine)")
        stage.print("CONSUMPTION_REQUEST for \(lost.transactionId): HTTP \(try simulator.send(request, to: url).map(String.init) ?? "-")")
        let fourth = try reconciler.runPass()
        stage.print("pass 4: \(fourth.summaryLine)\n")
        if let text = try stage.orderText("apple-\(lost.transactionId)", true) {
            stage.print(text)
        }
        let revoked = (try? String(contentsOfFile: folder + "/revoked.log", encoding: .utf8)) ?? ""
        stage.print("the demo revoke hook was called \(Plural.count(revoked.split(separator: "\n").count, "time")) "
                      + "(idempotency key, order, revocation type, percentage in milliunits):\n" + revoked)
        let finished = simulator.finishRequests.map(\.transactionId)
        stage.print("Finish Transaction told Apple \(finished.count) App Store transactions are finished, so StoreKit stops "
                      + "offering them to the app again: " + finished.sorted().joined(separator: ", "))
        for answer in simulator.consumptionRequests {
            stage.print("Send Consumption Information for \(answer.transactionId): \(answer.body?.serialized() ?? "-")")
        }
    }
}
