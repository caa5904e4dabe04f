import SettleBase
import SettleLedger

/// The live daemons of a shared (PostgreSQL) ledger, for `settle status`.
extension StatusView {
    package static func text(workers: [DaemonRecord], now: Int64) -> String {
        guard !workers.isEmpty else { return "workers: none live (no heartbeat in the last \(PostgresLedger.liveWindowSeconds / 60) minutes)" }
        var out = "workers: \(workers.count) live\n"
        for worker in workers {
            out += "  \(worker.owner.host) pid \(worker.owner.pid), heartbeat \(worker.heartbeatAt.map { Timestamp.relative($0, now: now) } ?? "never")"
                + ", started \(Timestamp.relative(worker.startedAt, now: now))"
                + (worker.lastPassSummary.map { ", last pass: \($0)" } ?? "") + "\n"
        }
        return String(out.dropLast())
    }

    package static func json(workers: [DaemonRecord]) -> JSONValue {
        .array(workers.map { worker in
            .object([
                ("host", .string(worker.owner.host)),
                ("pid", .number(String(worker.owner.pid))),
                ("heartbeat_at", worker.heartbeatAt.map { .string(Timestamp.rfc3339(unixSeconds: $0)) } ?? .null),
                ("started_at", .string(Timestamp.rfc3339(unixSeconds: worker.startedAt))),
                ("last_pass", worker.lastPassSummary.map(JSONValue.string) ?? .null),
            ])
        })
    }
}
