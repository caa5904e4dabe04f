import SettleBase
import SettleLedger
import SettleEngine

/// What the App Store adds to status: Finish Transaction calls Apple refused for good (the
/// orders are finished, but StoreKit may still offer their transactions to the app), and each
/// order's Finish Transaction.
extension AppStoreModule {
    package static func statusNotes(_ ledger: any SettleLedger) throws(LedgerError) -> [StoreStatusNote] {
        let refused = try ledger.refusedAppleFinishes()
        return [StoreStatusNote(
            jsonKey: "apple_finishes_refused", json: .number(refused),
            text: refused > 0 ? "App Store: Apple refused Finish Transaction for \(refused) finished orders (settle status ORDER shows why)" : nil,
            alert: refused > 0 ? "Apple refused Finish Transaction for \(refused) finished orders" : nil)]
    }

    package static func orderSections(_ ledger: any SettleLedger, orderId: String) throws(LedgerError) -> [StoreOrderSection] {
        guard let finish = try ledger.appleFinish(orderId: orderId) else { return [] }
        let json = JSONValue.object([("state", .string(finish.state)), ("attempts", .number(finish.attempts)),
                                     ("last_error", .string(finish.lastError)),
                                     ("updated_at", .string(Timestamp.rfc3339(unixSeconds: finish.updatedAt)))])
        // Finish Transaction: whether StoreKit still offers the transaction to the app.
        let text = "finished with Apple: \(finish.state), \(Plural.count(finish.attempts, "attempt"))"
            + (finish.lastError.map { ": " + PrintableText.escape($0) } ?? "")
        return [StoreOrderSection(jsonKey: "apple_finish", json: json, title: "Finished with Apple", id: "apple-finish", text: text,
                                  facts: [("state", finish.state), ("attempts", String(finish.attempts)),
                                          ("last error", finish.lastError ?? "-")])]
    }
}
