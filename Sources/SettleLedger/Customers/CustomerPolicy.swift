import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// What the developer prefers a store to do with a customer's refund request, in settle's own
/// words: each store module maps it to its store's values (and says when its store has none).
/// The core never names a store's value.
package enum RefundPreference: String, Sendable, CaseIterable, Equatable {
    /// Refuse the refund.
    case decline
    /// Refund all of it.
    case grantFull = "grant_full"
    /// Refund the part not used (the usage evidence's consumption percentage says how much was).
    case grantProrated = "grant_prorated"
    /// No preference: the store decides.
    case neutral
}

/// Who wrote a customer record or an order's usage evidence last.
package enum CustomerSource: String, Sendable, CaseIterable, Equatable {
    /// The backend's own SQL `INSERT` (the column's default).
    case backend
    /// `settle customer set` / `settle customer usage` at a shell.
    case cli
    /// The delivery hook's answer (`customer`, `usage`) for an order of this customer.
    case hook
    /// A person on the support console (`/users/U`).
    case console
}

/// One customer's refund policy (`customers`): whether they consented to their data being shared
/// with the store, and the developer's refund preference for them. No record, or a field left
/// empty, means "unknown": the global settings answer.
package struct CustomerPolicy: Sendable, Equatable {
    package var userId: String
    /// true: consented; false: refused; nil: not known.
    package var consented: Bool?
    /// When the consent answer was recorded, and by whom ("backend", "hook", "cli alice", "console bob").
    package var consentAt: Int64?
    package var consentBy: String?
    package var refundPreference: RefundPreference?
    package var note: String?
    package var updatedAt: Int64
    package var setBy: CustomerSource
    /// The person behind a `cli` or `console` change.
    package var setByName: String?
    /// What a row written by SQL held that settle cannot use ("refund_preference 'maybe' is not one of …").
    package var problems: [String] = []

    package init(
        userId: String, consented: Bool? = nil, consentAt: Int64? = nil, consentBy: String? = nil,
        refundPreference: RefundPreference? = nil, note: String? = nil, updatedAt: Int64 = 0,
        setBy: CustomerSource = .backend, setByName: String? = nil
    ) {
        self.userId = userId
        self.consented = consented
        self.consentAt = consentAt
        self.consentBy = consentBy
        self.refundPreference = refundPreference
        self.note = note
        self.updatedAt = updatedAt
        self.setBy = setBy
        self.setByName = setByName
    }

    /// "consented (hook, 2026-01-01T00:00:00Z)", "refused", "unknown".
    package var consentText: String {
        let said: String
        switch consented {
        case true?: said = "consented"
        case false?: said = "refused"
        case nil: return "unknown"
        }
        let when = [consentBy, consentAt.map { Timestamp.rfc3339(unixSeconds: $0) }].compactMap { $0 }
        return when.isEmpty ? said : "\(said) (\(when.joined(separator: ", ")))"
    }
}

/// A coarse place (Google's `CoarseLocation` fields that name no street): a CLDR region code, and
/// optionally the region's first subdivision and the city.
package struct CoarseLocation: Sendable, Equatable {
    package var regionCode: String
    package var administrativeArea: String?
    package var locality: String?

    package init(regionCode: String, administrativeArea: String? = nil, locality: String? = nil) {
        self.regionCode = regionCode
        self.administrativeArea = administrativeArea
        self.locality = locality
    }
}

/// One time the customer used what they bought, as the backend saw it.
package struct UsageEvent: Sendable, Equatable {
    /// Unix seconds.
    package var at: Int64
    package var description: String

    package init(at: Int64, description: String) {
        self.at = at
        self.description = description
    }
}

/// The usage evidence of one order (`order_usage`), as the backend knows it. Every field may be
/// unknown (nil or empty), and unknown is never sent.
package struct OrderUsage: Sendable, Equatable {
    package var orderId: String
    /// How much of the purchase was used, in thousandths of a percent (0...100,000).
    package var consumptionMilliunits: Int64?
    /// How long the customer used the app or content, in seconds.
    package var playTimeSeconds: Int64?
    package var events: [UsageEvent] = []
    /// Where the events happened; sent only with the customer's consent.
    package var ipAddress: String?
    package var location: CoarseLocation?
    package var updatedAt: Int64 = 0
    package var setBy: CustomerSource = .backend
    /// What a row written by SQL held that settle cannot use; that field is treated as unknown.
    package var problems: [String] = []

    package init(
        orderId: String, consumptionMilliunits: Int64? = nil, playTimeSeconds: Int64? = nil, events: [UsageEvent] = [],
        ipAddress: String? = nil, location: CoarseLocation? = nil
    ) {
        self.orderId = orderId
        self.consumptionMilliunits = consumptionMilliunits
        self.playTimeSeconds = playTimeSeconds
        self.events = events
        self.ipAddress = ipAddress
        self.location = location
    }

    /// Whether anything is known.
    package var isEmpty: Bool {
        consumptionMilliunits == nil && playTimeSeconds == nil && events.isEmpty && ipAddress == nil && location == nil
    }
}

/// What the ledger lets a store module tell its store about one order's customer when it answers
/// a refund request: the consent, the per-customer preference (nil: use the global setting), and
/// the usage evidence, present only when the customer consented.
package struct RefundEvidence: Sendable, Equatable {
    package enum Consent: String, Sendable { case given, refused, unknown }

    package var userId: String?
    package var consent: Consent
    /// The customer's own preference; nil when none is recorded or the customer refused consent
    /// (then only what the global settings send is sent).
    package var preference: RefundPreference?
    /// Only with consent given, and only what is known.
    package var usage: OrderUsage?
    /// What the history says settle used and why ("customer u-1: consent given (hook), preference
    /// decline; usage: consumption 45.2 %").
    package var summary: String

    /// Nothing known about the customer: the global settings answer, as before customers were kept
    /// (and the history says nothing more than it did).
    package static func unknown(_ userId: String?) -> RefundEvidence {
        RefundEvidence(userId: userId, consent: .unknown, preference: nil, usage: nil, summary: "")
    }
}

/// The limits of what a backend, a hook or a person may record (the SQL CHECKs hold the same).
package enum CustomerLimits {
    package static let userIdCharacters = 200
    package static let noteCharacters = 1000
    package static let maxMilliunits: Int64 = 100_000
    /// Ten years of play.
    package static let maxSecondsOfUse: Int64 = 315_360_000
    /// Events kept per order (Google takes up to 1,000; settle keeps what a refund review weighs).
    package static let maxEvents = 100
    /// Google's own limit for a usage event's description is 5,000.
    package static let eventDescriptionCharacters = 1000
    package static let placeCharacters = 100
    /// Stored text of the events (the SQL CHECK).
    package static let eventsTextCharacters = 200_000
}
