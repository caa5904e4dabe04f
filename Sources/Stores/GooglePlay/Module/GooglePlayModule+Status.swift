import SettleBase
import SettleModel
import SettleLedger
import SettleEngine
import SettleGooglePlay

/// What Google Play adds to an order's status (`settle status ORDER`, the console's order page,
/// which the customer view links): Google's words on a subscription on hold or in its grace
/// period, and whether the acknowledge told Google whose the purchase is (`externalAccountIds`).
/// Both are read from the order's history, where the pass wrote them.
extension GooglePlayModule {
    /// The history outcome of Google's state context (`PlayStateContext`).
    static let stateOutcome = "google_play_state"

    /// Writes what Google said of a subscription on hold or in its grace period to the order's
    /// history, once for each thing it said (a hold rechecked every few hours adds nothing new).
    package static func record(_ learned: any LearnedFact, of order: Order,
                               in ledger: any SettleLedger) throws(LedgerError) {
        guard let context = learned as? PlayStateContext else { return }
        try ledger.recordPlayState(orderId: order.orderId, detail: "Google Play: the subscription is " + context.text)
    }

    package static func orderSections(_ ledger: any SettleLedger,
                                      orderId: String) throws(LedgerError) -> [StoreOrderSection] {
        guard let record = try ledger.orderRecord(orderId), record.order.store == .googlePlay else { return [] }
        let state = record.history.last { $0.outcome == stateOutcome }?.detail
        let account = record.history.last { accountIdWords[$0.outcome] != nil }.flatMap { accountIdWords[$0.outcome] }
        guard state != nil || account != nil else { return [] }
        var members: [(String, JSONValue)] = []
        var facts: [(String, String)] = []
        if let state {
            members.append(("subscription_state", .string(state)))
            facts.append(("subscription", state))
        }
        if let account {
            members.append(("external_account_id", .string(account.code)))
            facts.append(("externalAccountId", account.words))
        }
        let text = [state, account.map { "externalAccountId: " + $0.words }].compactMap { $0 }.joined(separator: "; ")
        var section = StoreOrderSection(jsonKey: "google_play", json: .object(members), title: "Google Play",
                                        id: "google-play", text: PrintableText.escape(text), facts: facts)
        section.subscriptionNote = state.map { PrintableText.escape($0) }
        return [section]
    }

    /// The acknowledge outcomes that say something of `externalAccountIds`, in words.
    static let accountIdWords: [String: (code: String, words: String)] = [
        "acknowledged_with_account_id":
            ("sent", "sent to Google with the acknowledge (Google shows it on the purchase and its renewals)"),
        "already_acknowledged_account_id_not_sent":
            ("not_sent_acknowledged_before", "not sent to Google: acknowledged before settle knew whose it is "
                + "(the app, or settle before the assignment), and Google has no call that sets it later"),
        "acknowledged_account_id_refused":
            ("refused_by_google", "Google refused it; the purchase was acknowledged without it"),
    ]
}

extension TransactionalLedger {
    /// Appends Google's state context to the order's history unless the newest one says the same.
    package func recordPlayState(orderId: String, detail: String) throws(LedgerError) {
        let now = time.unixSeconds
        try writing { db in
            let last = try db.query("""
                SELECT detail FROM history WHERE order_id = ? AND outcome = 'google_play_state' ORDER BY id DESC LIMIT 1
                """, [.text(orderId)]).first?.string("detail")
            guard last != detail else { return }
            let entry = HistoryEntry(at: now, kind: .verification, outcome: "google_play_state", detail: detail)
            try db.appendHistory(orderId, entry)
        }
    }
}
