import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleAppStore

/// The App Store: verifyReceipt (`receipt_api`), StoreKit 2's signed data and the App Store
/// Server API (`server_api`), and App Store Server Notifications on the listener. An order is
/// finished without a word to Apple; Apple is told after the pass (Finish Transaction, the
/// `finishes` queue). Its notifications' work (refund-request answers, the history catch-up) is
/// the notification inbox's; the revokes they enqueue are the core's.
package struct AppStoreAdapter: StoreAdapter {
    package var store: Store { .appStore }
    /// verifyReceipt, when `receipt_api` is configured.
    package var receipts: ReceiptVerifier?
    /// StoreKit 2 signed data and the App Store Server API.
    package var storeKit: StoreKitVerifier
    /// The products sold on the App Store.
    package var products: Set<String>
    /// App Store Server Notifications, at `notifications.path` when the listener is configured.
    package var inbox: NotificationInbox?
    package var notificationsPath: String?
    /// Set App Account Token after `settle assign`, when `server_api` is configured.
    package var accountTokens: AppAccountTokens?
    /// Finish Transaction for every finished App Store order (nil: nothing is done with them).
    package var finishes: FinishTransactionQueue?
    /// `notifications.history_interval_seconds` when the listener is configured: how often the
    /// daemon reads Get Notification History (nil: never).
    package var historyIntervalSeconds: Double?

    package init(receipts: ReceiptVerifier?, storeKit: StoreKitVerifier, products: Set<String>, inbox: NotificationInbox? = nil,
                 notificationsPath: String? = nil, finishes: FinishTransactionQueue? = nil) {
        self.finishes = finishes
        self.receipts = receipts
        self.storeKit = storeKit
        self.products = products
        self.inbox = inbox
        self.notificationsPath = notificationsPath
    }

    /// A product missing from `products` is a gap on settle's side, sent to a person without
    /// asking Apple (no answer of Apple's could make it grantable).
    package func verify(_ order: Order) throws -> Verification {
        guard products.contains(order.productId) else {
            return Verification(outcome: .needsAttention(reason: .unknownProduct,
                                                         detail: "product \(order.productId) is not in the configuration's products; "
                                                             + "add it, then settle retry \(Verdict.shellWord(order.orderId))"))
        }
        if order.signedTransaction == nil, order.receiptSHA256 != nil {
            if let receipts {
                // verifyReceipt's purchases carry no appTransactionId; the order's AppTransaction is still learned.
                switch storeKit.appTransaction(of: order) {
                case let .failure(refused): return refused.verification
                case let .success(app):
                    var verification = try receipts.verify(order)
                    verification.learned = app
                    return verification
                }
            }
            guard storeKit.legacyReceipt != nil else {
                return Verification(outcome: .configurationFault("the order has an app receipt but neither receipt_api nor server_api is configured"))
            }
        }
        do {
            return try storeKit.verify(order)
        } catch let error as LegacyReceiptError {
            return Verification(outcome: .rejected(reason: .receiptInvalid, detail: error.message))
        }
    }

    package func afterPass(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        // Finish Transaction first (StoreKit keeps offering an unfinished transaction to the
        // app); the account tokens then share what is left of the same lent time.
        let finished = try finishes?.work(work) ?? .idle
        switch finished {
        case .storeUnavailable, .configurationFault, .paced: return finished
        case .idle, .answered: return finished.then(try accountTokens?.run(work) ?? .idle)
        }
    }

    package var listenerRoutes: [String: ListenerRoute] {
        guard let inbox, let notificationsPath else { return [:] }
        return [notificationsPath: { request in inbox.answer(request.body) }]
    }

    package func obligations(final: Bool) throws(LedgerError) -> Int {
        try inbox?.answerRefundRequests(recheckSeconds: final ? NotificationInbox.evidenceRecheckSeconds : 0) ?? 0
    }

    /// Get Notification History at start and every `notifications.history_interval_seconds`.
    package var tasks: [StoreTask] {
        guard let inbox, let historyIntervalSeconds else { return [] }
        return [StoreTask(event: "notifications.history_synced", failedEvent: "notifications.history_failed",
                          intervalSeconds: historyIntervalSeconds) { progress in
            let report = try inbox.syncHistory(progress: progress)
            return StoreTaskReport(fields: [("stored", report.stored), ("pages", report.pages), ("stopped", report.stoppedBecause)],
                                   needsPass: report.needsPass)
        }]
    }
}

extension Reconciler {
    /// App Store Server Notifications' inbox, when the App Store is configured.
    package var inbox: NotificationInbox? { (stores[.appStore] as? AppStoreAdapter)?.inbox }
}

/// A stored legacy receipt that is not a PKCS#7 app receipt.
package struct LegacyReceiptError: Error {
    package var message: String
    /// Why the receipt's signature was refused; its `code` is stable (receipt_signature_invalid, ...).
    package var signatureFailure: ReceiptSignatureFailure? = nil
}
