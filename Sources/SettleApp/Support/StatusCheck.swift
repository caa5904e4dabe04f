import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleEngine

/// `settle status --check`: whether settle is working, for a monitor or a shell (as `systemctl
/// is-active` answers): each thing wrong, one line each, or "OK". Wrong means settle cannot do
/// its work without a person: a store's breaker open (the store down, or settle's credentials or
/// hook refused: its last error says which), no daemon running, its last pass older than three
/// intervals, or a store's own alert (notifications it could not apply).
package struct StatusCheck: Sendable {
    package var problems: [String]

    /// A pass may take this long beyond its interval before it counts as late.
    package static let lateAfterIntervals: Int64 = 3
    package static let lateMarginSeconds: Int64 = 60

    package init(_ report: StatusReport, configuration: Configuration, now: Int64) {
        self.init(breakers: report.breakers, daemon: report.daemon, storeNotes: report.storeNotes, hook: report.hook,
                  configuration: configuration, now: now)
    }

    /// The check from its parts alone (no order counts): what the console's banner reads on every page.
    package static func read(_ ledger: any SettleLedger, configuration: Configuration, now: Int64) throws -> StatusCheck {
        StatusCheck(breakers: try ledger.breakers(), daemon: try ledger.daemonRecord(),
                    storeNotes: try StoreModules.all.statusNotes(ledger),
                    // The newest calls tell whether the hook starts: a page need not count the whole window.
                    hook: try ledger.hookActivity(since: now - StatusReport.hookWindowSeconds, runningLimit: 0, callsCap: 50),
                    configuration: configuration, now: now)
    }

    init(breakers: [Store: StoreBreaker], daemon: DaemonRecord?, storeNotes: [StoreStatusNote], hook: HookActivity,
         configuration: Configuration, now: Int64) {
        var problems: [String] = []
        for store in Store.allCases {
            guard let breaker = breakers[store], breaker.state == .open else { continue }
            let until = breaker.retryAt.map { " (next probe at \(Timestamp.rfc3339(unixSeconds: $0)))" } ?? ""
            let why = breaker.lastError.map { ": " + PrintableText.escape(String($0.prefix(300))) } ?? ""
            problems.append("\(store.logName): breaker open\(until)\(why)")
        }
        let late = Self.lateAfterIntervals * Int64(configuration.schedule.intervalSeconds.rounded(.up)) + Self.lateMarginSeconds
        if let daemon, daemon.isRunning {
            let last = daemon.lastPassAt ?? daemon.startedAt
            if now - last > late {
                problems.append("daemon: the last pass ended \(Self.age(now - last)) ago; passes run every "
                                + "\(Int(configuration.schedule.intervalSeconds)) s (pid \(daemon.owner.pid))")
            }
        } else {
            problems.append("daemon: not running (settle run); nothing is reconciled until it is")
        }
        if let daemon, daemon.isRunning, let error = daemon.reloadError {
            let when = daemon.reloadFailedAt.map { " at \(Timestamp.rfc3339(unixSeconds: $0))" } ?? ""
            problems.append("daemon: its last reload failed\(when), so it runs with the previous configuration: "
                            + PrintableText.escape(String(error.prefix(300))) + "; fix it (settle check-config), then reload again")
        }
        for note in storeNotes { if let alert = note.alert { problems.append(alert) } }
        if let fault = Self.hookCannotStart(hook, breakers: breakers) {
            problems.append("hook: it cannot start (\(PrintableText.escape(String(fault.prefix(300))))); run settle check-config, "
                            + "then settle reconcile: nothing is delivered until it is fixed")
        }
        self.problems = problems
    }

    package var isHealthy: Bool { problems.isEmpty }

    /// The hook's fault when its last failure in the window is that it cannot start, or a
    /// store's breaker keeps that fault (noted on the store whose order met it).
    static func hookCannotStart(_ hook: HookActivity, breakers: [Store: StoreBreaker]) -> String? {
        if hook.lastOutcome == "cannot_start", let last = hook.lastFailure { return last.message }
        // A call since that ran (or failed otherwise) shows the hook starts again.
        if hook.lastOutcome != nil { return nil }
        let prefix = StoreBreaker.configurationFaultPrefix + HookFault.cannotStart
        return breakers.values.compactMap(\.lastError).first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    package var text: String { isHealthy ? "OK: every store answering, the daemon passing on schedule" : problems.joined(separator: "\n") }

    private static func age(_ seconds: Int64) -> String {
        seconds >= 3600 ? "\(seconds / 3600)h\((seconds % 3600) / 60)m" : seconds >= 60 ? "\(seconds / 60)m\(seconds % 60)s" : "\(seconds)s"
    }
}
