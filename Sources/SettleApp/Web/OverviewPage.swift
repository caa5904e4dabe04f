import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// `/`: the ledger at a glance, as `settle status` prints it and a little more: counts by store
/// and state, the orders waiting for a person by reason with what to do, Google's refund
/// clocks, each store's health, the daemon's last pass, the newest notification, and the last
/// seven days' settlements per hour.
enum OverviewPage {
    static func render(_ request: WebRequest, console: WebConsole) throws -> HTTPServerResponse {
        let now = console.time.unixSeconds
        let report = try StatusReport.read(console.ledger, filter: OrderFilter(limit: 15), configuration: console.configuration,
                                           time: console.time, lookups: .localOnly)
        let summary = report.summary
        let waiting = try console.ledger.attentionByReason()
        let hours = try console.ledger.settlementsPerHour(since: now - 7 * 86400)
        let newest = try console.ledger.newestNotificationAt()
        var first = [counts(summary), attention(waiting, summary: summary, console: console, now: now)]
        if !summary.refundDeadlines.isEmpty { first.append(refundClocks(summary, now: now)) }
        if let revenue = report.revenue { first.append(Self.revenue(revenue)) }
        first.append(refunders(report))
        let body: Markup = """
            <div class="grid">\(first)</div>
            <div class="grid">\(health(report, now: now))\(hook(report, now: now))\(daemon(report, newest: newest, now: now))</div>
            \(WebPage.section("Settled per hour, last 7 days", id: "chart", ActivityChart.svg(hours, now: now)))
            \(WebPage.section("Recently changed orders", id: "recent", WebPage.orderTable(summary.orders, now: now, id: "recent-orders")))
            """
        return WebPage.render("Overview", body, request: request, console: console)
    }

    static func counts(_ summary: LedgerSummary) -> Markup {
        let stores = Store.allCases.filter { store in store == .ofUnnamedOrders || summary.storeCounts[store]?.values.contains { $0 > 0 } == true }
        let rows = OrderState.allCases.map { state -> [Markup] in
            ["<a href=\"/orders?state=\(state.rawValue)\">\(WebPage.stateBadge(state))</a>"] + stores.map { store -> Markup in "\(StatusView.storeCount(summary, store, state))" }
                + ["\(summary.counts[state] ?? 0)"]
        }
        let table = WebPage.table(["state"] + stores.map(\.logName) + ["all"], rows, id: "counts",
                                  numeric: Set(1...(stores.count + 1)))
        let oldest = summary.oldestUndeliveredSeconds.map(Timestamp.age) ?? "none"
        return WebPage.section("Orders by store and state", id: "orders", table + "<p>oldest undelivered: <strong id=\"oldest\">\(oldest)</strong></p>")
    }

    /// Each reason with its meaning and, from its newest order's verdict, what to do.
    static func attention(_ waiting: AttentionSummary, summary: LedgerSummary, console: WebConsole, now: Int64) -> Markup {
        let groups = waiting.groups
        let total = summary.counts[.needsAttention] ?? 0
        // Transfers and redeliveries a hook refused wait for a person too, on finished orders.
        let actions: Markup = summary.supportActionsWaitingCount == 0 ? .empty
            : "<p id=\"support-actions-waiting\"><strong>\(summary.supportActionsWaitingCount) support actions waiting</strong> "
                + "(transfer or redeliver refused or out of attempts; ask again from the order's page): "
                + Markup.join(summary.supportActionsWaiting.map(WebPage.orderLink), separator: ", ") + "</p>"
        guard !groups.isEmpty else { return WebPage.section("Waiting for a person", id: "attention", actions.html.isEmpty ? "<p class=\"ok\">nothing needs attention</p>" : actions) }
        var items: [Markup] = []
        for group in groups {
            let reason = group.reason ?? "no reason recorded"
            var advice: Markup = .empty
            if let id = group.orderIds.first, let order = try? console.ledger.orderRecord(id)?.order,
               let next = Verdict(order, now: now).next {
                advice = "<p>what to do: \(next)</p>"
            }
            let links = Markup.join(group.orderIds.map(WebPage.orderLink), separator: ", ")
            let listLink: Markup = group.reason.map { r -> Markup in
                " <a class=\"list-link\" href=\"/orders?state=needs_attention&amp;reason=\(ListPage.query(r))\">list all</a>"
            } ?? .empty
            items.append("""
                <li><strong>\(reason)</strong> <span class="state needs_attention">\(group.count)</span>\(listLink)
                <p class="muted">\(Verdict.explanation(reason))</p>\(advice)<p>\(links)\(group.count > group.orderIds.count ? "…" : "")</p></li>
                """)
        }
        let sampled: Markup = waiting.complete ? .empty
            : "<p class=\"muted\">\(Plural.count(total, "order")) \(Plural.verb(total, "waits", "wait")); "
                + "the reasons are of the newest \(waiting.read)</p>"
        return WebPage.section("Waiting for a person", id: "attention", "<ul>\(items)</ul>" + sampled + actions)
    }

    static func refundClocks(_ summary: LedgerSummary, now: Int64) -> Markup {
        let rows = summary.refundDeadlines.map { d -> [Markup] in
            [WebPage.orderLink(d.orderId), "\(StatusView.deadlineText(d, now: now))"]
        }
        let stores = Set(summary.refundDeadlines.map(\.store)).sorted().map(\.displayName).joined(separator: ", ")
        return WebPage.section("\(stores) refund clocks, soonest first", id: "refund-clocks",
                               WebPage.table(["order", "clock"], rows, id: "deadlines"))
    }

    static func health(_ report: StatusReport, now: Int64) -> Markup {
        let rows = Store.allCases.map { store -> [Markup] in
            let pacer = StatusView.pacerText(store, summary: report.summary, buckets: report.pacer)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: "\n")
            return ["\(store.logName)", "\(StatusView.healthText(report.breakers[store] ?? StoreBreaker(), now: now))",
                    pacer.isEmpty ? .empty : WebPage.preformatted(pacer)]
        }
        var content = WebPage.table(["store", "health", "pacer"], rows, id: "health")
        for alert in report.storeNotes.compactMap { $0.alert } {
            content = content + "<p class=\"bad\">\(alert)</p>"
        }
        return WebPage.section("Store health", id: "stores", content)
    }

    /// The delivery hook's last 15 minutes: calls, failures, timeouts, the last failure (its
    /// order linked), and the calls running now with their age against the timeout.
    static func hook(_ report: StatusReport, now: Int64) -> Markup {
        let hook = report.hook
        let minutes = StatusReport.hookWindowSeconds / 60
        var content = WebPage.table(["last \(minutes) min", "calls", "failed", "timed out"],
                                    [["", "\(hook.calls)", "\(hook.failures)", "\(hook.timeouts)"]], id: "hook-counts",
                                    numeric: [1, 2, 3])
        if let last = hook.lastFailure {
            content = content + "<p id=\"hook-last-failure\" class=\"bad\">last failure \(Timestamp.age(now.saturatingSubtracting(last.at))) ago "
                + "on \(WebPage.orderLink(last.orderId)) (\(last.outcome)): \(last.message)</p>"
        }
        if hook.running.isEmpty {
            content = content + "<p class=\"muted\" id=\"hook-running\">no hook running now</p>"
        } else {
            let rows = hook.running.map { r -> [Markup] in
                [WebPage.orderLink(r.orderId), "\(Timestamp.age(now.saturatingSubtracting(r.since)))",
                 "\(Int(report.hookTimeoutSeconds)) s"]
            }
            content = content + WebPage.table(["running now", "for", "timeout"], rows, id: "hook-running")
        }
        return WebPage.section("Delivery hook", id: "hook", content)
    }

    static func daemon(_ report: StatusReport, newest: Int64?, now: Int64) -> Markup {
        var pairs = [("daemon", StatusView.daemonText(report.daemon, now: now)),
                     ("newest notification", newest.map { Timestamp.relative($0, now: now) } ?? "none received")]
        if let workers = report.workers { pairs.append(("workers", StatusView.text(workers: workers, now: now))) }
        return WebPage.section("Last pass", id: "daemon", WebPage.facts(pairs, id: "daemon-facts"))
    }
}
