import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine

/// What Huawei adds to `settle status` and the console: its stored notifications that wait or
/// could not be applied, how far the history catch-up has read, and an order's notifications.
extension HuaweiModule {
    package static func statusNotes(_ ledger: any SettleLedger) throws(LedgerError) -> [StoreStatusNote] {
        guard try ledger.hasMigration(HuaweiMigrations.notifications.name) else { return [] }
        let (counts, cursor) = try ledger.reading { db in
            let rows = try db.query(
                """
                SELECT sum(CASE WHEN state = 'pending' THEN 1 ELSE 0 END) AS waiting,
                       sum(CASE WHEN outcome = 'not_applied' THEN 1 ELSE 0 END) AS not_applied,
                       count(*) AS stored FROM huawei_notifications
                """)
            let cursor = try db.query("SELECT history_until_ms FROM huawei_cursor WHERE id = 1").first?.int(
                "history_until_ms")
            return (
                (rows.first?.int("waiting") ?? 0, rows.first?.int("not_applied") ?? 0, rows.first?.int("stored") ?? 0),
                cursor
            )
        }
        // A ledger Huawei never wrote to (no notification, no catch-up) says nothing of Huawei.
        guard counts.2 > 0 || cursor != nil else { return [] }
        let json = JSONValue.object([
            ("stored", .number(counts.2)), ("waiting", .number(counts.0)), ("not_applied", .number(counts.1)),
            ("history_read_until", cursor.map { .string(Timestamp.rfc3339(unixSeconds: $0 / 1000)) } ?? .null),
        ])
        guard counts.0 > 0 || counts.1 > 0 else {
            return [StoreStatusNote(jsonKey: "huawei_notifications", json: json)]
        }
        let text =
            "huawei notifications: \(counts.0) waiting for a pass, \(counts.1) not applied (a person looks: the notification's detail says why)"
        return [
            StoreStatusNote(
                jsonKey: "huawei_notifications", json: json, text: text,
                alert: counts.1 > 0
                    ? "\(counts.1) Huawei notifications could not be applied; each one's detail says why." : nil)
        ]
    }

    package static func orderSections(
        _ ledger: any SettleLedger, orderId: String
    ) throws(LedgerError) -> [StoreOrderSection] {
        guard try ledger.hasMigration(HuaweiMigrations.notifications.name) else { return [] }
        let rows = try ledger.reading { db in
            try db.query(
                "SELECT request_id, type, subtype, source, outcome, received_at FROM huawei_notifications WHERE order_id = ? ORDER BY received_at, request_id",
                [.text(orderId)])
        }
        guard !rows.isEmpty else { return [] }
        let entries = rows.map { row -> (String, String) in
            let type = (row.string("type") ?? "?") + (row.string("subtype").map { " (\($0))" } ?? "")
            let when = Timestamp.rfc3339(unixSeconds: row.int("received_at") ?? 0)
            return ("\(when) \(type)", "\(row.string("outcome") ?? "?") (\(row.string("source") ?? "?"))")
        }
        let json = JSONValue.array(
            rows.map { row in
                .object([
                    ("request_id", .string(row.string("request_id") ?? "")),
                    ("type", .string(row.string("type") ?? "")),
                    ("subtype", .string(row.string("subtype"))), ("source", .string(row.string("source") ?? "")),
                    ("outcome", .string(row.string("outcome") ?? "")),
                    ("received_at", .string(Timestamp.rfc3339(unixSeconds: row.int("received_at") ?? 0))),
                ])
            })
        let text = "Huawei notifications: " + entries.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
        return [
            StoreOrderSection(
                jsonKey: "huawei_notifications", json: json, title: "Huawei notifications", id: "huawei-notifications",
                text: text, facts: entries)
        ]
    }
}
