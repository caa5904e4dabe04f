import SettleBase

/// What the standalone `settle simulator` answers, read from a JSON plans file, so integrators
/// can test their hook and backend against scripted store answers (docs/testing.md). The file
/// is one object: the settings every store shares, here, and each store's own part, read by
/// that store's `StoreScript`.
///
/// `rate_limit` (requests a second): each store's endpoint groups answer 429 past it, as the
/// stores do (`SimulatedRateLimit`).
package struct SimulatorScript: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }

        package init(message: String) { self.message = message }
    }

    /// The app a store's part scripts when an entry names none (its bundle id or package name).
    package var bundleId: String
    /// Requests a second per endpoint group (`rate_limit`), nil for no limit.
    package var rateLimit: Double?
    /// Each store's part as read, by its type.
    private var parts: [ObjectIdentifier: any StoreScript] = [:]

    package init(bundleId: String) { self.bundleId = bundleId }

    /// Reads and checks a plans file, the shared settings first, then each of `parts` in
    /// order; every mistake names its place.
    package init(json: JSONValue, bundleId: String, parts: [any StoreScript.Type] = []) throws(Failure) {
        guard json.objectMembers != nil else { throw Failure(message: "the script must be a JSON object") }
        self.bundleId = bundleId
        if let limit = json["rate_limit"] {
            guard let rate = limit.looseString.flatMap(Double.init), rate > 0, rate.isFinite else {
                throw Failure(message: "rate_limit: expected requests a second, a positive number")
            }
            rateLimit = rate
        }
        for part in parts { self.parts[ObjectIdentifier(part)] = try part.init(json: json, script: self) }
    }

    /// A store's part as the file scripts it; for a part the file was not read with, nothing
    /// scripted but the shared settings.
    package func part<Part: StoreScript>(_ type: Part.Type) -> Part {
        parts[ObjectIdentifier(type)] as? Part ?? Part(script: self)
    }
}

/// One store's part of a plans file, which its simulator target reads and applies to its fake.
package protocol StoreScript: Sendable {
    /// Nothing scripted for the store but what `script` sets for every store.
    init(script: SimulatorScript)
    /// Reads the store's part of `json`, the whole plans file, with the shared settings in
    /// `script`; every mistake names its place.
    init(json: JSONValue, script: SimulatorScript) throws(SimulatorScript.Failure)
}
