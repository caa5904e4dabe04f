import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleEngine

/// Everything `settle status` reads for the ledger (or the orders a filter names), read once:
/// the command prints it as text or as JSON, and the support console renders the same value as
/// HTML and serves `json` at /api/status. One source, so the three never disagree.
package struct StatusReport: Sendable {
    package var summary: LedgerSummary
    package var breakers: [Store: StoreBreaker]
    package var daemon: DaemonRecord?
    /// A shared ledger's daemons, each with its heartbeat; nil on SQLite (one daemon).
    package var workers: [DaemonRecord]?
    /// What each store adds (`StoreModule.statusNotes`), in the modules' order.
    package var storeNotes: [StoreStatusNote]
    package var pacer: [StatusView.PacedBucket]
    /// Each store's answer when the filter's transaction is an order id of that store and the
    /// configuration sets the store up for its lookup, in the modules' order.
    package var storeOrders: [StoreOrderAnswer]
    /// The delivery hook's last 15 minutes and its calls running now.
    package var hook: HookActivity
    /// The configured hook timeout, against which a running call's age is shown.
    package var hookTimeoutSeconds: Double
    /// What settle recovered and clawed back in the last 30 days (`RevenueView`); nil for a filtered status.
    package var revenue: RevenueReport? = nil
    /// The customers with `refunds.flag_after` refunds or more in 90 days; nil for a filtered report.
    package var refunders: FrequentRefunders? = nil

    /// The window of the hook's activity that status and the console show.
    package static let hookWindowSeconds: Int64 = 15 * 60

    /// Reads the report. A store's order id in `filter.transactionId` is looked up with the store
    /// first when it is configured for that (the purchases behind it are then listed), else
    /// matched locally.
    /// The stores' order lookups a report may use: a store without one is matched locally only.
    package struct StoreLookups: Sendable {
        package var byStore: [Store: any StoreOrderLookup]

        package init(_ byStore: [Store: any StoreOrderLookup] = [:]) {
            self.byStore = byStore
        }

        /// No store is asked: what the console's GET pages and `/api/status` use (named so that it is
        /// never read as `Optional.none`, which would mean "the configured ones").
        package static let localOnly = StoreLookups()

        /// Each store the configuration sets up for it, among those whose order id `id` may be (all when nil).
        package static func configured(_ configuration: Configuration, time: any TimeSource,
                                       for id: String? = nil) throws(ConfigError) -> StoreLookups {
            var byStore: [Store: any StoreOrderLookup] = [:]
            for module in StoreModules.all where id.map({ module.isOrderId($0) }) ?? true {
                // This process's own pacer: a support lookup runs in `settle status`, not in the daemon.
                let pacer = Reconciler.storePacer(configuration, modules: StoreModules.all)
                byStore[module.descriptor.store] = try module.orderLookup(configuration, time: time, pacer: pacer)
            }
            return StoreLookups(byStore)
        }
    }

    /// `lookups` nil: the stores the configuration sets up (`settle status`, one lookup a process).
    package static func read(_ ledger: any SettleLedger, filter: OrderFilter, configuration: Configuration,
                             time: any TimeSource, lookups given: StoreLookups? = nil) throws -> StatusReport {
        var filter = filter
        let id = filter.transactionId ?? ""
        let lookups = try given ?? StoreLookups.configured(configuration, time: time, for: id)
        var storeOrders: [StoreOrderAnswer] = []
        for module in StoreModules.all {
            guard let id = filter.transactionId, module.isOrderId(id),
                  let lookup = lookups.byStore[module.descriptor.store] else { continue }
            let answer = lookup.lookUp(id)
            answer.narrow(&filter)
            storeOrders.append(answer)
        }
        // Buckets a host saved within the live window: a stopped host's are left out.
        let pacer = StatusView.pacedBuckets(try ledger.pacerBuckets(since: time.unixSeconds - PostgresLedger.liveWindowSeconds))
        var report = StatusReport(summary: try ledger.summary(filter), breakers: try ledger.breakers(),
                                  daemon: try ledger.daemonRecord(),
                                  workers: ledger.isShared ? try ledger.liveDaemons() : nil,
                                  storeNotes: try StoreModules.all.statusNotes(ledger),
                                  pacer: pacer,
                                  storeOrders: storeOrders,
                                  hook: try ledger.hookActivity(since: time.unixSeconds - hookWindowSeconds),
                                  hookTimeoutSeconds: configuration.delivery.timeoutSeconds)
        report.revenue = try revenue(ledger, filtered: report.summary.filtered, now: time.unixSeconds)
        // The whole ledger's flagged customers; a filtered report (one user, one order) names no others.
        if !report.summary.filtered {
            report.refunders = try ledger.frequentRefunders(configuration, now: time.unixSeconds)
        }
        return report
    }

    /// `settle status --json` (SPEC section 6).
    package var json: JSONValue {
        var json = StatusView.json(summary, breakers: breakers, daemon: daemon)
        guard case var .object(members) = json else { return json }
        members += storeNotes.map { ($0.jsonKey, $0.json) }
        members.append(("pacer", StatusView.json(pacer: pacer, summary: summary)))
        let held = summary.matching
        members.insert(contentsOf: storeOrders.map { ($0.jsonKey, $0.json(held)) }, at: 0)
        if let workers { members.append(("workers", StatusView.json(workers: workers))) }
        members.append(("hook", StatusView.json(hook, timeoutSeconds: hookTimeoutSeconds)))
        if let revenue { members.append(("revenue", RevenueView.json(revenue))) }
        if let refunders { members.append(("refunders", refunders.json)) }
        json = .object(members)
        return json
    }

    /// `settle status` for a person.
    package func text(now: Int64) -> String {
        var out = ""
        for answer in storeOrders { out += answer.text(summary.matching).withLineEnd }
        out += StatusView.text(summary, breakers: breakers, daemon: daemon, pacer: pacer, now: now).withLineEnd
        out += "hook: " + StatusView.hookText(hook, timeoutSeconds: hookTimeoutSeconds, now: now) + "\n"
        for note in storeNotes { if let line = note.text { out += line + "\n" } }
        if let revenue { out += RevenueView.statusLine(revenue) + "\n" }
        if let workers { out += StatusView.text(workers: workers, now: now).withLineEnd }
        if let refunders { out += "refunds: " + refunders.text + "\n" }
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
    /// What each store adds to the order's status (`StoreModule.orderSections`).
    package var storeSections: [StoreOrderSection]
    /// Transfers and redeliveries support asked for, with their steps.
    package var supportActions: [SupportAction]
    /// The order's store's breaker, which the verdict names while it is open.
    package var breaker: StoreBreaker?

    /// Nil when the ledger has no such order.
    package static func read(_ ledger: any SettleLedger, orderId: String) throws(LedgerError) -> OrderReport? {
        guard let record = try ledger.orderRecord(orderId) else { return nil }
        return OrderReport(order: record.order, history: record.history, notifications: try ledger.notifications(orderId: orderId),
                           revoke: try ledger.revocation(orderId: orderId), storeSections: try StoreModules.all.orderSections(ledger, orderId: orderId),
                           supportActions: try ledger.supportActions(orderId: orderId),
                           breaker: try ledger.breakers()[record.order.store])
    }

    /// The one verdict every view of the order shows (text, JSON, the order page).
    package func verdict(now: Int64) -> Verdict {
        Verdict(order, now: now, context: context)
    }

    var context: VerdictContext {
        let outage = breaker.flatMap { b -> VerdictContext.Outage? in
            guard b.state == .open else { return nil }
            return VerdictContext.Outage(openedAt: b.retryAt.map { $0.saturatingSubtracting(b.cooldownSeconds) }, probeAt: b.retryAt,
                                         error: b.lastError.map { String($0.trimmingPrefix(StoreBreaker.configurationFaultPrefix)) },
                                         configurationFault: b.isOpenForConfigurationFault)
        }
        let lastDelivery = history.last { $0.kind == .delivery }
        let said = lastDelivery.flatMap { $0.outcome == "delivered" ? nil : StatusView.historyRows([$0]).first?.hookSaid.last }
        return VerdictContext(outage: outage, hookSaid: said, supportActions: supportActions)
    }

    /// `settle status ORDER_ID --json`.
    package func json(now: Int64) -> JSONValue {
        var json = StatusView.json(order, history: history, notifications: notifications, revoke: revoke,
                                   storeSections: storeSections)
        if case var .object(members) = json {
            members.insert(("verdict", StatusView.json(verdict(now: now))), at: 0)
            members.append(("support_actions", .array(supportActions.map(StatusView.json))))
            json = .object(members)
        }
        return json
    }

    /// `settle status ORDER_ID`.
    package func text(now: Int64) -> String {
        StatusView.text(order, history: history, notifications: notifications, now: now, revoke: revoke,
                        storeSections: storeSections, verdict: verdict(now: now))
            + StatusView.text(supportActions, now: now)
    }
}

private extension String {
    var withLineEnd: String { hasSuffix("\n") ? self : self + "\n" }
}
