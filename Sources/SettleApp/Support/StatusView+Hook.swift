import SettleBase
import SettleModel
import SettleLedger

/// The delivery hook's health in words and JSON: `settle status`'s `hook:` line, the console's
/// card and `/api/status`'s `hook` object read the same `HookActivity`.
extension StatusView {
    /// "12 calls in the last 15 min, 2 failed (1 timed out); last failure 3m ago on o-1: hook failed (exit 1);
    /// running now: o-7 for 12s of its 30 s timeout".
    package static func hookText(_ hook: HookActivity, timeoutSeconds: Double, now: Int64) -> String {
        let minutes = max(1, (now - hook.since) / 60)
        var out = (hook.capped ? "\(hook.calls)+ calls" : Plural.count(hook.calls, "call")) + " in the last \(minutes) min"
        if hook.calls > 0 {
            out += ", \(hook.failures) failed" + (hook.timeouts > 0 ? " (\(hook.timeouts) timed out)" : "")
        }
        if let last = hook.lastFailure {
            out += "; last failure \(Timestamp.age(now.saturatingSubtracting(last.at))) ago on \(last.orderId): "
                + PrintableText.escape(last.message)
        }
        out += hook.running.isEmpty ? "; none running now" : "; running now: " + hook.running.map { running in
            "\(PrintableText.escape(running.orderId)) for \(Timestamp.age(now.saturatingSubtracting(running.since))) "
                + "of its \(Int(timeoutSeconds)) s timeout"
        }.joined(separator: ", ")
        return out
    }

    package static func json(_ hook: HookActivity, timeoutSeconds: Double) -> JSONValue {
        .object([
            ("since", time(hook.since)),
            ("calls", .number(hook.calls)),
            ("calls_capped", .bool(hook.capped)),
            ("failures", .number(hook.failures)),
            ("timeouts", .number(hook.timeouts)),
            ("last_failure", hook.lastFailure.map { f in
                .object([("at", time(f.at)), ("order_id", .string(f.orderId)), ("outcome", .string(f.outcome)),
                         ("message", .string(f.message))])
            } ?? .null),
            ("running", .array(hook.running.map { .object([("order_id", .string($0.orderId)), ("since", time($0.since))]) })),
            ("timeout_seconds", .number(Int(timeoutSeconds))),
        ])
    }
}
