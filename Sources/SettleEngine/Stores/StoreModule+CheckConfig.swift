import SettleBase
import SettleConfig

/// Default of what `settle check-config` asks a module beyond `validate`: a store without
/// secrets of its own has none to read, and one without settings of its own prints none.
extension StoreModule {
    package static func readSecrets(_ configuration: Configuration) throws(ConfigError) {}

    package static func describe(_ configuration: Configuration) -> [String] { [] }
}

/// How `check-config` writes what a module's configuration says.
package enum ConfigurationText {
    /// Each endpoint group's rate, the published one unless configured ("order_lookup 20 (configured)").
    package static func rates(_ published: [String: Double], _ configured: [String: Double]) -> String {
        published.keys.sorted().map { group in
            configured[group].map { "\(group) \(number($0)) (configured)" } ?? "\(group) \(number(published[group]!))"
        }.joined(separator: ", ")
    }

    /// A number as a person writes it: 10, 0.5.
    package static func number(_ value: Double) -> String {
        value.rounded() == value ? String(Int(value)) : String(value)
    }

    /// A URL without what may be a credential: user info (`user:password@`), the query
    /// (`?token=`) and the fragment are replaced by `<redacted>`, as `HTTPErrorRedaction` does
    /// for errors.
    package static func url(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return "<redacted: not a URL>" }
        var rest = url[schemeEnd.upperBound...]
        var shown = String(url[..<schemeEnd.upperBound])
        let authority = rest.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        if let at = authority.lastIndex(of: "@") {
            shown += "<redacted>@"
            rest = rest[rest.index(after: at)...]
        }
        if let cut = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            return shown + rest[..<cut] + (rest[cut] == "?" ? "?<redacted>" : "#<redacted>")
        }
        return shown + rest
    }
}
