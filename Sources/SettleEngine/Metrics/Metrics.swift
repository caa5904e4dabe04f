import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleLedger
import SettleDelivery

/// The counters of a process's passes, rendered after each pass as a Prometheus text file (for
/// node_exporter's textfile collector), written atomically. Every series carries the app's
/// `bundle_id`, so the files of several settle instances on one machine never collide. No
/// per-order labels.
package final class Metrics: Sendable {
    /// Upper bounds of request duration histograms, in seconds.
    package static let buckets: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    private struct State {
        var deliveries: [String: Int] = ["delivered": 0, "retry": 0, "refused": 0, "timeout": 0]
        var hookDurations = [Int](repeating: 0, count: Metrics.hookDurationBounds.count)
        var hookDurationCount = 0
        var hookDurationSum = 0.0
        var openBreakers: Set<Store> = []
        var lastPassAt: Int64?
        var notifications: [String: Int] = [:]     // "type|outcome" -> count
        var newestNotificationAt: Int64?
        var storeRequests: [String: Int] = [:]     // "store|call|outcome" -> count
        var storeFinishes: [String: Int] = [:]     // "store|outcome" -> count
        var pacer: [PacerSnapshot] = []
        var revenue: RevenueReport? = nil
    }

    private let state = Mutex(State())
    /// The store modules' own families' counters (`family(_:)`), by type.
    let storeFamilies = Mutex<[ObjectIdentifier: any StoreMetricFamilies]>([:])

    package init() {}

    /// One hook call: its result (`timeout` when it ran past its timeout, whatever came of it)
    /// and how long it took (`settle_hook_duration_seconds`).
    package func observeDelivery(_ outcome: DeliveryOutcome, timedOut: Bool = false, durationMs: Int? = nil) {
        let label: String
        switch outcome {
        case _ where timedOut: label = "timeout"
        case .delivered: label = "delivered"
        case .retry: label = "retry"
        case .refused: label = "refused"
        case .unconfirmed: label = "unconfirmed"
        case .alreadyGranted: label = "already_granted"
        case .cannotStart: label = "cannot_start"
        }
        state.withLock { s in
            s.deliveries[label, default: 0] += 1
            if let durationMs {
                let seconds = Double(max(0, durationMs)) / 1000
                for (index, bound) in Self.hookDurationBounds.enumerated() where seconds <= bound { s.hookDurations[index] += 1 }
                s.hookDurationCount += 1
                s.hookDurationSum += seconds
            }
        }
    }

    /// The upper bounds (seconds) of `settle_hook_duration_seconds`' buckets.
    package static let hookDurationBounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// One notification received: its type (Apple's, or `unverified`) and what came of it.
    /// `at` is when a new one was stored, for the newest notification's age.
    package func observeNotification(type: String, outcome: String, at: Int64?) {
        // A type of no letters (or none at all) still counts, under a name of its own: an empty
        // label would make the key's first part vanish when it is split for the exposition.
        let kept = String(type.prefix(64).filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        let label = kept.isEmpty ? "unnamed" : kept
        state.withLock { s in
            s.notifications["\(label)|\(outcome)", default: 0] += 1
            if let at { s.newestNotificationAt = max(s.newestNotificationAt ?? at, at) }
        }
    }

    /// The newest notification the ledger holds, read at start so the age survives restarts.
    package func observeNewestNotification(at: Int64?) {
        guard let at else { return }
        state.withLock { s in s.newestNotificationAt = max(s.newestNotificationAt ?? at, at) }
    }

    /// One HTTP request to a store: the call and a short outcome label.
    package func observeStoreRequest(store: String, call: String, outcome: String) {
        state.withLock { $0.storeRequests["\(store)|\(call)|\(outcome)", default: 0] += 1 }
    }

    /// A store told (or not) that an order was delivered: `acknowledged`, `consumed`, `failed`, ...
    package func observeStoreFinish(store: String, outcome: String) {
        let label = String(outcome.prefix(while: { $0 != ":" }))
        state.withLock { $0.storeFinishes["\(store)|\(label)", default: 0] += 1 }
    }

    /// This process's pacer buckets as a pass left them.
    package func observePacer(_ buckets: [PacerSnapshot]) {
        state.withLock { $0.pacer = buckets }
    }

    /// A pass ended, leaving the breakers of `openBreakers` open.
    package func observePass(openBreakers: Set<Store>, at time: Int64) {
        state.withLock { s in
            s.openBreakers = openBreakers
            s.lastPassAt = time
        }
    }

    /// What settle recovered and clawed back in the last 30 days, read from the ledger before the
    /// file is written (`Metrics+Revenue`).
    package func observeRevenue(_ report: RevenueReport?) { state.withLock { $0.revenue = report } }

    /// The whole file, in the Prometheus text exposition format (version 0.0.4).
    package func render(summary: LedgerSummary, bundleId: String,
                        now: Int64 = Int64(Date().timeIntervalSince1970)) -> String {
        let s = state.withLock { $0 }
        let app = "bundle_id=\"\(Metrics.labelValue(bundleId))\""
        var out = Metrics.passFamilies(s, summary, app: app)
        out += Metrics.notificationFamilies(s, app: app, now: now)
        out += Metrics.ledgerFamilies(summary, app: app, now: now)
        out += Metrics.refundFamilies(summary, app: app)
        out += Metrics.storeFamilies(s, app: app)
        out += Metrics.pacerFamilies(s.pacer, app: app)
        out += renderStoreFamilies(app: app)
        out += s.revenue.map { Metrics.revenueFamilies($0, app: app) } ?? ""
        out += Metrics.family("settle_build_info", "gauge", "The running settle's version.")
        out += "settle_build_info{\(app),version=\"\(SettleVersion.number)\"} 1\n"
        return out
    }

    /// A family's HELP and TYPE lines, which come before its series.
    static func family(_ name: String, _ type: String, _ help: String) -> String { header(name, type, help) }

    /// What the passes did: the orders by state, the hook's answers, the breakers.
    private static func passFamilies(_ s: State, _ summary: LedgerSummary, app: String) -> String {
        var out = family("settle_orders", "gauge", "Orders in the ledger by state.")
        for state in OrderState.allCases {
            out += "settle_orders{\(app),state=\"\(state.rawValue)\"} \(summary.counts[state] ?? 0)\n"
        }
        out += family("settle_oldest_undelivered_seconds", "gauge",
                      "Age of the oldest paid order not yet delivered (0 when none).")
        out += "settle_oldest_undelivered_seconds{\(app)} \(summary.oldestUndeliveredSeconds ?? 0)\n"
        out += family("settle_deliveries_total", "counter", "Delivery hook calls by result.")
        for key in s.deliveries.keys.sorted() {
            out += "settle_deliveries_total{\(app),result=\"\(key)\"} \(s.deliveries[key] ?? 0)\n"
        }
        out += family("settle_hook_duration_seconds", "histogram", "How long delivery hook calls took.")
        for (index, bound) in Self.hookDurationBounds.enumerated() {
            out += "settle_hook_duration_seconds_bucket{\(app),le=\"\(bound)\"} \(s.hookDurations[index])\n"
        }
        out += "settle_hook_duration_seconds_bucket{\(app),le=\"+Inf\"} \(s.hookDurationCount)\n"
        out += "settle_hook_duration_seconds_sum{\(app)} \(s.hookDurationSum)\n"
        out += "settle_hook_duration_seconds_count{\(app)} \(s.hookDurationCount)\n"
        out += family("settle_breaker_open", "gauge",
                      "1 while the store's breaker is open (its orders are not claimed; the other store's go on).")
        for store in Store.allCases {
            out += "settle_breaker_open{\(app),store=\"\(store.rawValue)\"} \(s.openBreakers.contains(store) ? 1 : 0)\n"
        }
        out += family("settle_last_pass_timestamp_seconds", "gauge", "When the last reconcile pass ended (Unix time).")
        out += "settle_last_pass_timestamp_seconds{\(app)} \(s.lastPassAt ?? 0)\n"
        return out
    }

    /// The notifications received, and how old the newest is.
    private static func notificationFamilies(_ s: State, app: String, now: Int64) -> String {
        var out = family("settle_notifications_total", "counter",
                         "App Store Server Notifications received, by type and outcome.")
        out += counterSamples("settle_notifications_total", s.notifications, app: app, labels: ["type", "outcome"])
        out += family("settle_newest_notification_age_seconds", "gauge",
                      "Seconds since the newest notification was stored (-1 when none).")
        let age = s.newestNotificationAt.map { max(0, now - $0) } ?? -1
        out += "settle_newest_notification_age_seconds{\(app)} \(age)\n"
        return out
    }

    /// What the ledger holds by store, and what waits for a deadline or a person.
    private static func ledgerFamilies(_ summary: LedgerSummary, app: String, now: Int64) -> String {
        var out = family("settle_store_orders", "gauge", "Orders in the ledger by store and state.")
        for state in OrderState.allCases {
            for store in Store.allCases {
                let labels = "store=\"\(store.rawValue)\",state=\"\(state.rawValue)\""
                out += "settle_store_orders{\(app),\(labels)} \(summary.storeCounts[store]?[state] ?? 0)\n"
            }
        }
        out += family("settle_play_ack_deadline_soon", "gauge",
                      "Orders their store was not yet told of (acknowledged) with less than 24 h before it refunds them.")
        for store in Store.allCases where store.refundWindowSeconds != nil {
            let urgent = summary.refundDeadlines.filter { $0.store == store && $0.isUrgent(now: now) }.count
            out += "settle_play_ack_deadline_soon{\(app),store=\"\(store.rawValue)\"} \(urgent)\n"
        }
        out += family("settle_support_actions_waiting", "gauge",
                      "Transfers and redeliveries waiting for a person "
                          + "(their hook refused, or their attempts ran out).")
        out += "settle_support_actions_waiting{\(app)} \(summary.supportActionsWaitingCount)\n"
        return out
    }

    /// Requests to stores, and stores told of deliveries.
    private static func storeFamilies(_ s: State, app: String) -> String {
        var out = family("settle_store_requests_total", "counter",
                         "HTTP requests to stores other than those with families of their own, by store, call and outcome.")
        out += counterSamples("settle_store_requests_total", s.storeRequests, app: app, labels: ["store", "call", "outcome"])
        out += family("settle_store_finish_total", "counter",
                      "Stores told an order was delivered (acknowledge, consume), by store and outcome.")
        out += counterSamples("settle_store_finish_total", s.storeFinishes, app: app, labels: ["store", "outcome"])
        return out
    }

    /// What each of this host's pacer buckets did, by store, endpoint group and environment.
    private static func pacerFamilies(_ pacer: [PacerSnapshot], app: String) -> String {
        func bucket(_ b: PacerSnapshot) -> String {
            "\(app),store=\"\(labelValue(b.key.store))\",group=\"\(labelValue(b.key.group))\","
                + "environment=\"\(labelValue(b.key.environment))\""
        }
        var out = family("settle_pacer_rate", "gauge",
                         "Requests a second this host's pacer grants now, by store, endpoint group and environment.")
        for b in pacer { out += "settle_pacer_rate{\(bucket(b))} \(format(b.rate))\n" }
        out += family("settle_pacer_ceiling_rate", "gauge",
                      "This host's share of the store's published or configured rate.")
        for b in pacer { out += "settle_pacer_ceiling_rate{\(bucket(b))} \(format(b.ceilingRate))\n" }
        out += family("settle_pacer_learned_rate", "gauge",
                      "For an endpoint the store publishes no limit for (verifyReceipt): the rate it last refused at "
                          + "(the ceiling until its first 429), which the bucket's rate stays near.")
        for b in pacer {
            if let learned = b.learnedRate { out += "settle_pacer_learned_rate{\(bucket(b))} \(format(learned))\n" }
        }
        out += family("settle_pacer_requests_total", "counter", "Requests the pacer let through to the store.")
        for b in pacer { out += "settle_pacer_requests_total{\(bucket(b))} \(b.granted)\n" }
        out += family("settle_pacer_throttled_total", "counter",
                      "HTTP 429 answers from the store (each lowers the bucket's rate).")
        for b in pacer { out += "settle_pacer_throttled_total{\(bucket(b))} \(b.throttles)\n" }
        out += family("settle_pacer_floor_throttled_total", "counter",
                      "HTTP 429 answers at the bucket's floor rate: the store refusing below its published rate "
                          + "(its breaker hears of them).")
        for b in pacer { out += "settle_pacer_floor_throttled_total{\(bucket(b))} \(b.floorThrottles)\n" }
        out += family("settle_pacer_waits_total", "counter",
                      "Times a request waited for its bucket (or was deferred to a later pass).")
        for b in pacer { out += "settle_pacer_waits_total{\(bucket(b))} \(b.waits)\n" }
        return out
    }

    /// Writes the file atomically: a temporary file in the same folder, fsynced, then renamed
    /// over the old one, so a scraper never reads half a file.
    package func write(to path: String, summary: LedgerSummary, bundleId: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temporary = (folder as NSString).appendingPathComponent(".\(name).\(getpid()).tmp")
        let data = Data(render(summary: summary, bundleId: bundleId).utf8)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary]) }
        let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == data.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    /// A label value as the exposition format wants it: backslash, quote and newline escaped.
    package static func labelValue(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    package static func format(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
