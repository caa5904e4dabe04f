import SettleModel
/// The App Store environment a piece of Apple's data comes from or a request goes to
/// (https://developer.apple.com/documentation/appstoreserverapi/environment). The raw values
/// are Apple's spelling, which is also what the ledger stores and what status, logs and
/// metrics print, so `description` is the raw value.
///
/// Only `production` and `sandbox` are ever accepted or asked: `xcode` and `localTesting` are
/// StoreKit test tooling's, not App Store-signed (apple-protocol.md 3), and are named so a
/// refusal can say which one it was. Text that is none of these is not an `AppleEnvironment`:
/// where such text can arrive (Apple's JSON, a ledger row) the code keeps the text beside the
/// optional enum, as Apple's own libraries do, so it stays visible and is never read as
/// production.
package enum AppleEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case production = "Production"
    case sandbox = "Sandbox"
    /// StoreKit Testing in Xcode: signed by Xcode's own key.
    case xcode = "Xcode"
    /// Apple's local test environment in its server libraries.
    case localTesting = "LocalTesting"

    package var description: String { rawValue }
}

extension Order {
    /// The environment Apple last answered from for this App Store order; nil for a Google
    /// Play order, before any answer, and for stored text settle does not know (which then
    /// routes as an order never seen in sandbox does, and `environment` still shows it).
    package var appleEnvironment: AppleEnvironment? {
        guard store == .appStore else { return nil }
        return environment.flatMap(AppleEnvironment.init(rawValue:))
    }
}
