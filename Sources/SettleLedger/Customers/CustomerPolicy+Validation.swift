import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Reads what a backend, a hook or a person gives for a customer or an order's usage, and refuses
/// what no store would take or what is not what it claims to be, naming the field. The same rules
/// read rows a backend wrote with SQL: there a bad field is named and treated as unknown.
package enum CustomerInput {
    /// A problem with one field, named as the caller spelled it.
    package struct Problem: Error, Sendable, CustomStringConvertible {
        package var field: String
        package var message: String
        package var description: String { "\(field): \(message)" }
        package init(_ field: String, _ message: String) {
            self.field = field
            self.message = message
        }
    }

    package static func userId(_ text: String) throws(Problem) -> String {
        guard !text.isEmpty else { throw Problem("user", "is empty") }
        guard text.count <= CustomerLimits.userIdCharacters else {
            throw Problem("user", "longer than \(CustomerLimits.userIdCharacters) characters")
        }
        guard !text.unicodeScalars.contains(where: PrintableText.isControl) else {
            throw Problem("user", "holds control characters")
        }
        return text
    }

    package static func preference(
        _ text: String, field: String = "refund_preference"
    ) throws(Problem) -> RefundPreference {
        guard let preference = RefundPreference(rawValue: text) else {
            let allowed = RefundPreference.allCases.map(\.rawValue).joined(separator: ", ")
            throw Problem(field, "'\(PrintableText.clip(text, 40))' is not one of \(allowed)")
        }
        return preference
    }

    package static func note(_ text: String) throws(Problem) -> String {
        guard text.count <= CustomerLimits.noteCharacters else {
            throw Problem("note", "longer than \(CustomerLimits.noteCharacters) characters")
        }
        return AuditEntry.printable(text, limit: CustomerLimits.noteCharacters)
    }

    package static func milliunits(_ value: Int64, field: String = "consumption_percentage") throws(Problem) -> Int64 {
        guard (0...CustomerLimits.maxMilliunits).contains(value) else {
            throw Problem(field, "\(value) is outside 0...100000 (thousandths of a percent: 45200 is 45.2 %)")
        }
        return value
    }

    package static func playTime(_ value: Int64, field: String = "play_time_seconds") throws(Problem) -> Int64 {
        guard (0...CustomerLimits.maxSecondsOfUse).contains(value) else {
            throw Problem(field, "\(value) is outside 0...\(CustomerLimits.maxSecondsOfUse) seconds")
        }
        return value
    }

    /// An IPv4 or IPv6 address, as written (no port, no name).
    package static func ipAddress(_ text: String, field: String = "ip_address") throws(Problem) -> String {
        var v4 = in_addr(), v6 = in6_addr()
        guard text.count <= 45, inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1 else {
            throw Problem(field, "'\(PrintableText.clip(text, 45))' is not an IPv4 or IPv6 address")
        }
        return text
    }

    /// A CLDR region code ("KR", "US", "419") and optional first subdivision and city.
    package static func location(
        regionCode: String, administrativeArea: String?, locality: String?,
        field: String = "location"
    ) throws(Problem) -> CoarseLocation {
        let code = regionCode.unicodeScalars
        let letters = code.count == 2 && code.allSatisfy { ("A"..."Z").contains($0) }
        let digits = code.count == 3 && code.allSatisfy { ("0"..."9").contains($0) }
        guard letters || digits else {
            throw Problem(
                "\(field).region_code", "'\(PrintableText.clip(regionCode, 8))' is not a CLDR region code (KR, US, 419)"
            )
        }
        func place(_ text: String?, _ name: String) throws(Problem) -> String? {
            guard let text, !text.isEmpty else { return nil }
            guard text.count <= CustomerLimits.placeCharacters,
                !text.unicodeScalars.contains(where: PrintableText.isControl)
            else {
                throw Problem(
                    "\(field).\(name)",
                    "longer than \(CustomerLimits.placeCharacters) characters or holds control characters")
            }
            return text
        }
        return CoarseLocation(
            regionCode: regionCode, administrativeArea: try place(administrativeArea, "administrative_area"),
            locality: try place(locality, "locality"))
    }

    /// `[{"time": RFC 3339, "description": text}, …]`, at most `CustomerLimits.maxEvents`.
    package static func events(_ json: JSONValue, field: String = "events") throws(Problem) -> [UsageEvent] {
        guard case let .array(items) = json else { throw Problem(field, "is not a JSON array") }
        guard items.count <= CustomerLimits.maxEvents else {
            throw Problem(field, "\(items.count) events; at most \(CustomerLimits.maxEvents) are kept")
        }
        var events: [UsageEvent] = []
        for (index, item) in items.enumerated() {
            let name = "\(field)[\(index)]"
            guard case let .string(time)? = item["time"], let ms = ConfigurationDecoder.rfc3339Milliseconds(time) else {
                throw Problem("\(name).time", "missing or not an RFC 3339 time (2026-01-01T10:00:00Z)")
            }
            guard case let .string(description)? = item["description"], !description.isEmpty else {
                throw Problem("\(name).description", "missing or empty")
            }
            guard description.count <= CustomerLimits.eventDescriptionCharacters else {
                throw Problem(
                    "\(name).description", "longer than \(CustomerLimits.eventDescriptionCharacters) characters")
            }
            events.append(
                UsageEvent(
                    at: ms / 1000,
                    description: AuditEntry.printable(
                        description,
                        limit: CustomerLimits.eventDescriptionCharacters)))
        }
        return events
    }

    /// The events as stored (`order_usage.usage_events`).
    package static func eventsText(_ events: [UsageEvent]) -> String? {
        guard !events.isEmpty else { return nil }
        return JSONValue.array(
            events.map { event in
                .object([
                    ("time", .string(Timestamp.rfc3339(unixSeconds: event.at))),
                    ("description", .string(event.description)),
                ])
            }
        ).serialized()
    }

    /// The `usage` object of a hook's answer or `settle customer usage --json`:
    /// `{"consumption_percentage": 45200, "play_time_seconds": 3600, "ip_address": "…",
    ///   "location": {"region_code": "KR", "administrative_area": "…", "locality": "…"}, "events": […]}`.
    package static func usage(_ json: JSONValue, orderId: String, field: String = "usage") throws(Problem) -> OrderUsage
    {
        guard case let .object(members) = json else { throw Problem(field, "is not a JSON object") }
        let known: Set = ["consumption_percentage", "play_time_seconds", "ip_address", "location", "events"]
        if let unknown = members.first(where: { !known.contains($0.0) }) {
            throw Problem(
                "\(field).\(PrintableText.clip(unknown.0, 40))",
                "is not a usage field (\(known.sorted().joined(separator: ", ")))")
        }
        var usage = OrderUsage(orderId: orderId)
        if let value = json["consumption_percentage"], value != .null {
            guard let number = value.exactInt64 else {
                throw Problem("\(field).consumption_percentage", "is not a whole number")
            }
            usage.consumptionMilliunits = try milliunits(number, field: "\(field).consumption_percentage")
        }
        if let value = json["play_time_seconds"], value != .null {
            guard let number = value.exactInt64 else {
                throw Problem("\(field).play_time_seconds", "is not a whole number")
            }
            usage.playTimeSeconds = try playTime(number, field: "\(field).play_time_seconds")
        }
        if let value = json["ip_address"], value != .null {
            guard case let .string(text) = value else { throw Problem("\(field).ip_address", "is not a string") }
            usage.ipAddress = try ipAddress(text, field: "\(field).ip_address")
        }
        if let value = json["location"], value != .null {
            guard case let .string(code)? = value["region_code"] else {
                throw Problem("\(field).location.region_code", "missing (a CLDR region code: KR, US)")
            }
            usage.location = try location(
                regionCode: code, administrativeArea: value["administrative_area"]?.looseString,
                locality: value["locality"]?.looseString, field: "\(field).location")
        }
        if let value = json["events"], value != .null { usage.events = try events(value, field: "\(field).events") }
        return usage
    }
}

extension JSONValue {
    /// A JSON number that is a whole number fitting in 64 bits (not 1.5, not 1e30, not "12").
    package var exactInt64: Int64? {
        guard case let .number(text) = self else { return nil }
        return Int64(text)
    }
}

extension PrintableText {
    /// At most `limit` characters of `text`, control characters as spaces: for quoting bad input in a message.
    package static func clip(_ text: String, _ limit: Int) -> String {
        AuditEntry.printable(text, limit: limit)
    }
}
