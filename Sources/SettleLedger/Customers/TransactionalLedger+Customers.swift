import Foundation
import SettleBase
import SettleModel

/// A change to one customer's record: each nil field is left as it is.
package struct CustomerChange: Sendable, Equatable {
    package var consented: Bool?
    package var refundPreference: RefundPreference?
    /// Forget the preference (the global setting answers again).
    package var clearsPreference = false
    package var note: String?

    package init(
        consented: Bool? = nil, refundPreference: RefundPreference? = nil, clearsPreference: Bool = false,
        note: String? = nil
    ) {
        self.consented = consented
        self.refundPreference = refundPreference
        self.clearsPreference = clearsPreference
        self.note = note
    }

    package var isEmpty: Bool { consented == nil && refundPreference == nil && !clearsPreference && note == nil }

    /// "consented yes; refund_preference decline; note ticket 9" for the audit log and the history.
    package var text: String {
        var parts: [String] = []
        if let consented { parts.append("consented \(consented ? "yes" : "no")") }
        if let refundPreference { parts.append("refund_preference \(refundPreference.rawValue)") }
        if clearsPreference { parts.append("refund_preference cleared") }
        if let note { parts.append("note \(note)") }
        return parts.joined(separator: "; ")
    }
}

extension TransactionalLedger {
    /// Whether the schema keeps customers and usage evidence (a ledger not yet migrated does not:
    /// reads find nothing, and every answer is the global settings').
    package func knowsCustomers() throws(LedgerError) -> Bool {
        try schemaReached(isShared ? PostgresLedgerSchema.customersVersion : LedgerSchema.customersVersion)
    }

    package func customerPolicy(userId: String) throws(LedgerError) -> CustomerPolicy? {
        guard try knowsCustomers() else { return nil }
        return try reading { db in
            try db.query("SELECT * FROM customers WHERE user_id = ?", [.text(userId)]).first.map(
                CustomerPolicy.init(row:))
        }
    }

    package func orderUsage(orderId: String) throws(LedgerError) -> OrderUsage? {
        guard try knowsCustomers() else { return nil }
        return try reading { db in
            try db.query("SELECT * FROM order_usage WHERE order_id = ?", [.text(orderId)]).first.map(
                OrderUsage.init(row:))
        }
    }

    /// The usage evidence of `userId`'s orders (those they hold now), newest change first; at most `limit`.
    package func orderUsages(userId: String, limit: Int = 200) throws(LedgerError) -> [OrderUsage] {
        guard try knowsCustomers() else { return [] }
        return try reading { db in
            try db.query("""
                SELECT u.* FROM order_usage u JOIN orders o ON o.order_id = u.order_id
                WHERE o.user_id = ? ORDER BY u.updated_at DESC, u.order_id LIMIT ?
                """, [.text(userId), .integer(Int64(limit))]).map(OrderUsage.init(row:))
        }
    }

    /// Records `change` for `userId`, written by `source` (and `person`, audited, at a shell or on
    /// the console). The consent's time and author change only when the consent does.
    @discardableResult
    package func setCustomer(
        _ userId: String, _ change: CustomerChange, source: CustomerSource,
        by person: Operator? = nil
    ) throws(LedgerError) -> CustomerPolicy {
        guard try knowsCustomers() else {
            throw .invalid("the ledger's schema keeps no customers yet: run settle migrate")
        }
        let audit = try auditor(person)
        let now = time.unixSeconds
        let author = person.map { "\(source.rawValue) \($0.name)" } ?? source.rawValue
        return try writing { db in
            let old = try db.query("SELECT * FROM customers WHERE user_id = ?" + db.dialect.lockRows, [.text(userId)])
                .first.map(CustomerPolicy.init(row:))
            var policy = old ?? CustomerPolicy(userId: userId)
            if let consented = change.consented, consented != policy.consented {
                policy.consented = consented
                policy.consentAt = now
                policy.consentBy = author
            }
            if let preference = change.refundPreference { policy.refundPreference = preference }
            if change.clearsPreference { policy.refundPreference = nil }
            if let note = change.note { policy.note = note }
            policy.updatedAt = now
            policy.setBy = source
            policy.setByName = person?.name
            try db.query(
                """
                INSERT INTO customers(user_id, consented, consent_at, consent_by, refund_preference, note, updated_at,
                                      set_by, set_by_name)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET consented = excluded.consented, consent_at = excluded.consent_at,
                    consent_by = excluded.consent_by, refund_preference = excluded.refund_preference,
                    note = excluded.note,
                    updated_at = excluded.updated_at, set_by = excluded.set_by, set_by_name = excluded.set_by_name
                """,
                [
                    .text(userId), .from(policy.consented.map { Int64($0 ? 1 : 0) }), .from(policy.consentAt),
                    .from(policy.consentBy),
                    .from(policy.refundPreference?.rawValue), .from(policy.note), .integer(now), .text(source.rawValue),
                    .from(person?.name),
                ])
            if let person, let audit {
                try audit(db, AuditEntry(person, action: "customer_set", subject: userId, at: now, detail: change.text))
            }
            return policy
        }
    }

    /// Records what is known of `usage.orderId`'s use: each known field replaces the stored one,
    /// the rest stay. The order must be in the ledger.
    @discardableResult
    package func setOrderUsage(
        _ usage: OrderUsage, source: CustomerSource, by person: Operator? = nil
    ) throws(LedgerError) -> OrderUsage {
        guard try knowsCustomers() else {
            throw .invalid("the ledger's schema keeps no usage evidence yet: run settle migrate")
        }
        let audit = try auditor(person)
        let now = time.unixSeconds
        return try writing { db in
            guard try !db.query("SELECT 1 AS one FROM orders WHERE order_id = ?", [.text(usage.orderId)]).isEmpty else {
                throw LedgerError.invalid("no order \(usage.orderId) in the ledger")
            }
            let old = try db.query(
                "SELECT * FROM order_usage WHERE order_id = ?" + db.dialect.lockRows, [.text(usage.orderId)]
            )
            .first.map(OrderUsage.init(row:))
            var merged = old ?? OrderUsage(orderId: usage.orderId)
            merged.problems = []
            if let value = usage.consumptionMilliunits { merged.consumptionMilliunits = value }
            if let value = usage.playTimeSeconds { merged.playTimeSeconds = value }
            if !usage.events.isEmpty { merged.events = usage.events }
            if let value = usage.ipAddress { merged.ipAddress = value }
            if let value = usage.location { merged.location = value }
            merged.updatedAt = now
            merged.setBy = source
            try db.query(
                """
                INSERT INTO order_usage(order_id, consumption_milliunits, play_time_seconds, usage_events, ip_address,
                                        region_code,
                                        administrative_area, locality, updated_at, set_by)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (order_id) DO UPDATE SET consumption_milliunits = excluded.consumption_milliunits,
                    play_time_seconds = excluded.play_time_seconds, usage_events = excluded.usage_events,
                    ip_address = excluded.ip_address, region_code = excluded.region_code,
                    administrative_area = excluded.administrative_area, locality = excluded.locality,
                    updated_at = excluded.updated_at, set_by = excluded.set_by
                """,
                [
                    .text(usage.orderId), .from(merged.consumptionMilliunits), .from(merged.playTimeSeconds),
                    .from(CustomerInput.eventsText(merged.events)), .from(merged.ipAddress),
                    .from(merged.location?.regionCode),
                    .from(merged.location?.administrativeArea), .from(merged.location?.locality), .integer(now),
                    .text(source.rawValue),
                ])
            if let person, let audit {
                try audit(
                    db, AuditEntry(person, action: "usage_set", subject: usage.orderId, at: now, detail: usage.summary))
            }
            return merged
        }
    }

    /// What a store module may tell its store about `orderId`'s customer when it answers a refund
    /// request: see `RefundEvidence`. Consent refused: nothing of the customer's; consent not
    /// known: the developer's preference for them, no usage; consent given: both, and only the
    /// usage fields that are known.
    package func refundEvidence(orderId: String?) throws(LedgerError) -> RefundEvidence {
        guard let orderId, try knowsCustomers() else { return .unknown(nil) }
        let userId = try reading { db in
            try db.query("SELECT user_id FROM orders WHERE order_id = ?", [.text(orderId)]).first?.string("user_id")
        }
        guard let userId, !userId.isEmpty, let policy = try customerPolicy(userId: userId) else {
            return .unknown(userId)
        }
        let who = "customer \(userId)"
        let preference =
            policy.refundPreference.map { "preference \($0.rawValue) (\(policy.setBy.rawValue))" }
            ?? "no preference of theirs"
        let unusable = policy.problems.isEmpty ? "" : "; unusable: " + policy.problems.joined(separator: "; ")
        switch policy.consented {
        case false?:
            return RefundEvidence(
                userId: userId, consent: .refused, preference: nil, usage: nil,
                summary: "\(who) refused consent (\(policy.consentText)): nothing of theirs is sent\(unusable)")
        case nil:
            return RefundEvidence(
                userId: userId, consent: .unknown, preference: policy.refundPreference, usage: nil,
                summary: "\(who): consent unknown, \(preference); no usage evidence is sent\(unusable)")
        case true?:
            let usage = try orderUsage(orderId: orderId).flatMap { $0.isEmpty ? nil : $0 }
            let used = usage.map { "usage: " + $0.summary } ?? "no usage evidence recorded"
            let problems = (usage?.problems ?? []) + policy.problems
            return RefundEvidence(
                userId: userId, consent: .given, preference: policy.refundPreference, usage: usage,
                summary: "\(who): consent given (\(policy.consentText)), \(preference); \(used)"
                    + (problems.isEmpty ? "" : "; unusable: " + problems.joined(separator: "; ")))
        }
    }
}

extension CustomerPolicy {
    /// A row as stored; a value a backend's SQL wrote that settle cannot use is named in `problems`
    /// and treated as unknown (the CHECKs keep most of them out).
    init(row: any LedgerRow) {
        self.init(userId: row.string("user_id") ?? "")
        consented = row.int("consented").map { $0 == 1 }
        consentAt = row.int("consent_at")
        consentBy = row.string("consent_by")
        if let text = row.string("refund_preference") {
            do throws(CustomerInput.Problem) { refundPreference = try CustomerInput.preference(text) } catch {
                problems.append(error.description)
            }
        }
        note = row.string("note")
        updatedAt = row.int("updated_at") ?? 0
        setBy = row.string("set_by").flatMap(CustomerSource.init(rawValue:)) ?? .backend
        setByName = row.string("set_by_name")
    }
}

extension OrderUsage {
    init(row: any LedgerRow) {
        self.init(orderId: row.string("order_id") ?? "")
        updatedAt = row.int("updated_at") ?? 0
        setBy = row.string("set_by").flatMap(CustomerSource.init(rawValue:)) ?? .backend
        do throws(CustomerInput.Problem) {
            if let value = row.int("consumption_milliunits") {
                consumptionMilliunits = try CustomerInput.milliunits(value)
            }
        } catch { problems.append(error.description) }
        do throws(CustomerInput.Problem) {
            if let value = row.int("play_time_seconds") { playTimeSeconds = try CustomerInput.playTime(value) }
        } catch { problems.append(error.description) }
        do throws(CustomerInput.Problem) {
            if let text = row.string("usage_events") {
                guard let json = try? JSONValue.parse(Data(text.utf8)) else {
                    throw CustomerInput.Problem("usage_events", "is not JSON")
                }
                events = try CustomerInput.events(json, field: "usage_events")
            }
        } catch { problems.append(error.description) }
        do throws(CustomerInput.Problem) {
            if let text = row.string("ip_address") { ipAddress = try CustomerInput.ipAddress(text) }
        } catch { problems.append(error.description) }
        do throws(CustomerInput.Problem) {
            if let code = row.string("region_code") {
                location = try CustomerInput.location(
                    regionCode: code, administrativeArea: row.string("administrative_area"),
                    locality: row.string("locality"))
            }
        } catch { problems.append(error.description) }
    }

    /// "consumption 45.2 %, play time 1 h 0 min, 2 events, IP 192.0.2.1, location KR"
    package var summary: String {
        var parts: [String] = []
        if let value = consumptionMilliunits { parts.append("consumption \(Self.percent(value))") }
        if let value = playTimeSeconds { parts.append("play time \(Self.duration(value))") }
        if !events.isEmpty { parts.append(Plural.count(events.count, "event")) }
        if ipAddress != nil { parts.append("an IP address") }
        if let location {
            parts.append(
                "location "
                    + [location.regionCode, location.administrativeArea, location.locality].compactMap { $0 }
                    .joined(separator: ", "))
        }
        return parts.isEmpty ? "nothing known" : parts.joined(separator: ", ")
    }

    /// 45200 → "45.2 %".
    package static func percent(_ milliunits: Int64) -> String {
        let whole = milliunits / 1000, rest = milliunits % 1000
        guard rest != 0 else { return "\(whole) %" }
        var fraction = String(rest)
        fraction = String(repeating: "0", count: 3 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction) %"
    }

    /// 3700 → "1 h 1 min"; 59 → "59 s".
    package static func duration(_ seconds: Int64) -> String {
        guard seconds >= 60 else { return "\(seconds) s" }
        let hours = seconds / 3600, minutes = seconds % 3600 / 60
        return hours > 0 ? "\(hours) h \(minutes) min" : "\(minutes) min"
    }
}
