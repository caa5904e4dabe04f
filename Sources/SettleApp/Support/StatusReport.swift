import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleAppStoreModule

/// Everything `settle status` reads for the ledger (or the orders a filter names), read once:
/// the command prints it as text or as JSON, and the support console renders the same value as
/// HTML and serves `json` at /api/status. One source, so the three never disagree.
package struct StatusReport: Sendable {
    package var summary: LedgerSummary
    package var breakers: [Store: StoreBreaker]
    package var daemon: DaemonRecord?
    /// A shared ledger's daemons, each with its heartbeat; nil on SQLite (one daemon).
    package var workers: [DaemonRecord]?
    package var finishesRefused: Int
    package var pacer: [StatusView.PacedBucket]
    /// Apple's answer when the filter's transaction is an Apple order id and server_api is configured.
    package var appleOrder: AppleOrderLookup.Result?
    /// Google's answer when the filter's transaction is a Google order id and google_play is configured.
    package var googleOrder: GooglePlayOrderLookup.Result?

    /// Reads the report. An Apple or Google order id in `filter.transactionId` is looked up with
    /// the store first when it is configured for that (the purchases behind it are then listed),
    /// else matched locally.
    /// The stores' order lookups a report may use: nil ones are matched locally only.
    package struct StoreLookups: Sendable {
        package var apple: AppleOrderLookup?
        package var google: GooglePlayOrderLookup?

        package init(apple: AppleOrderLookup? = nil, google: GooglePlayOrderLookup? = nil) {
            self.apple = apple
            self.google = google
        }

        /// No store is asked: what the console's GET pages and `/api/status` use (named so that it is
        /// never read as `Optional.none`, which would mean "the configured ones").
        package static let localOnly = StoreLookups()

        /// Each store the configuration sets up for it (`server_api`, `google_play`).
        package static func configured(_ configuration: Configuration, time: any TimeSource) throws(ConfigError) -> StoreLookups {
            StoreLookups(apple: try AppleOrderLookup.configured(configuration, time: time),
                         google: try GooglePlayOrderLookup.configured(configuration, time: time))
        }
    }

    /// `lookups` nil: the stores the configuration sets up (`settle status`, one lookup a process).
    package static func read(_ ledger: any SettleLedger, filter: OrderFilter, configuration: Configuration,
                             time: any TimeSource, lookups given: StoreLookups? = nil) throws -> StatusReport {
        var filter = filter
        let id = filter.transactionId ?? ""
        let lookups = try given ?? StoreLookups(
            apple: AppleOrderLookup.isOrderId(id) ? AppleOrderLookup.configured(configuration, time: time) : nil,
            google: GooglePlayOrderLookup.isOrderId(id) ? GooglePlayOrderLookup.configured(configuration, time: time) : nil)
        var appleOrder: AppleOrderLookup.Result?
        if let id = filter.transactionId, AppleOrderLookup.isOrderId(id), let lookup = lookups.apple {
            appleOrder = lookup.lookUp(id)
            if case let .found(_, _, purchases) = appleOrder {
                filter.transactionIds = purchases.flatMap { [$0.transactionId, $0.originalTransactionId] }
            }
        }
        var googleOrder: GooglePlayOrderLookup.Result?
        if let id = filter.transactionId, GooglePlayOrderLookup.isOrderId(id), let lookup = lookups.google {
            googleOrder = lookup.lookUp(id)
            if case let .found(order, _) = googleOrder {
                filter.storeOrder = StoreOrderMatch(orderId: order.orderId, token: order.purchaseToken)
            }
        }
        // Buckets a host saved within the live window: a stopped host's are left out.
        let pacer = StatusView.pacedBuckets(try ledger.pacerBuckets(since: time.unixSeconds - PostgresLedger.liveWindowSeconds))
        return StatusReport(summary: try ledger.summary(filter), breakers: try ledger.breakers(), daemon: try ledger.daemonRecord(),
                            workers: ledger.isShared ? try ledger.liveDaemons() : nil,
                            finishesRefused: try ledger.refusedAppleFinishes(), pacer: pacer,
                            appleOrder: appleOrder, googleOrder: googleOrder)
    }

    /// `settle status --json` (SPEC section 6).
    package var json: JSONValue {
        var json = StatusView.json(summary, breakers: breakers, daemon: daemon)
        guard case var .object(members) = json else { return json }
        members.append(("apple_finishes_refused", .number(finishesRefused)))
        members.append(("pacer", StatusView.json(pacer: pacer, summary: summary)))
        if let googleOrder { members.insert(("google_play_order", StatusView.json(googleOrder, held: summary.matching)), at: 0) }
        if let appleOrder { members.insert(("apple_order", StatusView.json(appleOrder)), at: 0) }
        if let workers { members.append(("workers", StatusView.json(workers: workers))) }
        json = .object(members)
        return json
    }

    /// `settle status` for a person.
    package func text(now: Int64) -> String {
        var out = ""
        if let appleOrder { out += StatusView.text(appleOrder).withLineEnd }
        if let googleOrder { out += StatusView.text(googleOrder, held: summary.matching).withLineEnd }
        out += StatusView.text(summary, breakers: breakers, daemon: daemon, pacer: pacer, now: now).withLineEnd
        if finishesRefused > 0 {
            // The orders are finished; StoreKit may still offer these transactions to the app.
            out += "App Store: Apple refused Finish Transaction for \(finishesRefused) finished orders (settle status ORDER shows why)\n"
        }
        if let workers { out += StatusView.text(workers: workers, now: now).withLineEnd }
        return out
    }
}

/// One order as `settle status ORDER_ID` reads it: the row, its history, its notifications, the
/// revoke it owes and Apple's Finish Transaction, for the text, the JSON and the order's page.
package struct OrderReport: Sendable {
    package var order: Order
    package var history: [HistoryEntry]
    package var notifications: [NotificationRecord]
    package var revoke: (state: String, job: RevocationJob)?
    package var appleFinish: AppleFinishRecord?
    /// Transfers and redeliveries support asked for, with their steps.
    package var supportActions: [SupportAction]

    /// Nil when the ledger has no such order.
    package static func read(_ ledger: any SettleLedger, orderId: String) throws(LedgerError) -> OrderReport? {
        guard let record = try ledger.orderRecord(orderId) else { return nil }
        return OrderReport(order: record.order, history: record.history, notifications: try ledger.notifications(orderId: orderId),
                           revoke: try ledger.revocation(orderId: orderId), appleFinish: try ledger.appleFinish(orderId: orderId),
                           supportActions: try ledger.supportActions(orderId: orderId))
    }

    /// `settle status ORDER_ID --json`.
    package var json: JSONValue {
        var json = StatusView.json(order, history: history, notifications: notifications, revoke: revoke, appleFinish: appleFinish)
        if case var .object(members) = json {
            members.append(("support_actions", .array(supportActions.map(StatusView.json))))
            json = .object(members)
        }
        return json
    }

    /// `settle status ORDER_ID`.
    package func text(now: Int64) -> String {
        StatusView.text(order, history: history, notifications: notifications, now: now, revoke: revoke, appleFinish: appleFinish)
            + StatusView.text(supportActions, now: now)
    }
}

private extension String {
    var withLineEnd: String { hasSuffix("\n") ? self : self + "\n" }
}
