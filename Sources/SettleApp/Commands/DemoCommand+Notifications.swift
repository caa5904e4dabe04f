import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStoreSimulator

/// The demo's second act: Apple tells settle (App Store Server Notifications V2 to a real
/// endpoint on loopback) of a purchase no backend enqueued, of a refund, and of a refund request.
extension DemoCommand {
    static func revokeHook(_ folder: String) -> String {
        """
        #!/bin/sh
        # The demo's revoke hook: a real backend takes the goods back, idempotently by key.
        payload=$(cat)
        # How much to take back: Apple's revocation type and percentage (milliunits; null: all of it).
        kind=$(printf '%s' "$payload" | sed -n 's/.*"revocation_type":"\\([A-Z_]*\\)".*/\\1/p')
        share=$(printf '%s' "$payload" | sed -n 's/.*"revocation_percentage":\\([0-9a-z]*\\).*/\\1/p')
        echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID $kind $share" >> "\(folder)/revoked.log"
        echo "revoked $SETTLE_ORDER_ID: $payload"
        """
    }

    static func showNotifications(_ context: CommandContext, simulator: AppleSimulator, ledger: SQLiteLedger, reconciler: Reconciler,
                                  time: ManualTimeSource, folder: String) throws {
        guard let inbox = reconciler.inbox else { return }
        let endpoint: NotificationEndpoint
        do {
            endpoint = try NotificationEndpoint(address: "127.0.0.1:0", path: "/apple/notifications/v2", limits: .init(),
                                                log: Log(environment: [:], time: time, sink: { _ in })) { body in inbox.answer(body).response }
        } catch {
            throw CommandFailure(.unavailable, "cannot start the demo's notifications endpoint on 127.0.0.1: \(error)")
        }
        defer { endpoint.stop() }
        let url = "http://127.0.0.1:\(endpoint.port)/apple/notifications/v2"
        context.print("\nApple tells settle: App Store Server Notifications V2 posted to \(url)\n")
        let nowMs = time.unixSeconds * 1000
        // A purchase the app never reported (it was killed first); its token is user u-51's (order o-2002).
        let lost = SimulatedSignedTransaction(transactionId: "2000000300000001", productId: "com.example.game.coins100", bundleId: bundleId,
                                              purchaseDateMs: nowMs - 60_000, appAccountToken: "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b")
        simulator.script(transaction: lost.transactionId, TransactionScript(transaction: lost))
        let purchase = SimulatedNotification(type: "ONE_TIME_CHARGE", transaction: lost, bundleId: bundleId, signedDateMs: nowMs)
        context.print("ONE_TIME_CHARGE for \(lost.transactionId), never enqueued: HTTP \(try simulator.send(purchase, to: url).map(String.init) ?? "-")")
        // o-1001 was delivered in pass 1; Apple now refunds half of it (a prorated refund).
        var delivered = SimulatedSignedTransaction(transactionId: "2000000100000001", productId: "com.example.game.coins100",
                                                   bundleId: bundleId, purchaseDateMs: nowMs - 3_600_000, revocationDateMs: nowMs)
        delivered.revocationType = "REFUND_PRORATED"
        delivered.revocationPercentage = 50_000
        let refund = SimulatedNotification(type: "REFUND", transaction: delivered, bundleId: bundleId, signedDateMs: nowMs)
        context.print("REFUND (REFUND_PRORATED, 50 %) of \(delivered.transactionId) (order o-1001, delivered): HTTP \(try simulator.send(refund, to: url).map(String.init) ?? "-")")
        let request = SimulatedNotification(type: "CONSUMPTION_REQUEST", transaction: lost, bundleId: bundleId,
                                            consumptionRequestReason: "UNINTENDED_PURCHASE", signedDateMs: nowMs)
        let third = try reconciler.runPass()
        context.print("pass 3: \(third.summaryLine)")
        context.print("CONSUMPTION_REQUEST for \(lost.transactionId): HTTP \(try simulator.send(request, to: url).map(String.init) ?? "-")")
        let fourth = try reconciler.runPass()
        context.print("pass 4: \(fourth.summaryLine)\n")
        if let record = try ledger.orderRecord("apple-\(lost.transactionId)") {
            context.print(StatusView.text(record.order, history: record.history,
                                          notifications: try ledger.notifications(orderId: record.order.orderId),
                                          now: ledger.time.unixSeconds))
        }
        let revoked = (try? String(contentsOfFile: folder + "/revoked.log", encoding: .utf8)) ?? ""
        context.print("the demo revoke hook was called \(revoked.split(separator: "\n").count) times "
                      + "(idempotency key, order, revocation type, percentage in milliunits):\n" + revoked)
        let finished = simulator.finishRequests.map(\.transactionId)
        context.print("Finish Transaction told Apple \(finished.count) App Store transactions are finished, so StoreKit stops "
                      + "offering them to the app again: " + finished.sorted().joined(separator: ", "))
        for answer in simulator.consumptionRequests {
            context.print("Send Consumption Information for \(answer.transactionId): \(answer.body?.serialized() ?? "-")")
        }
    }
}
