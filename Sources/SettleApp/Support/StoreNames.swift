import SettleModel

/// The registered stores named as help texts and pages list them ("App Store and Google Play",
/// "Apple or Google"), so a text about every store follows the registry rather than naming
/// each store in the core.
enum StoreNames {
    /// Every store's display name, joined by `conjunction`: "App Store and Google Play".
    static func displayNames(_ conjunction: String = "and") -> String {
        list(StoreRegistry.descriptors.map { $0.displayName }, conjunction)
    }

    /// Every store's owner, joined by `conjunction`: "Apple or Google".
    static func owners(_ conjunction: String = "or") -> String {
        list(StoreRegistry.descriptors.map { $0.owner }, conjunction)
    }

    /// "a", "a and b", "a, b and c".
    static func list(_ names: [String], _ conjunction: String) -> String {
        guard let last = names.last else { return "" }
        let head = names.dropLast()
        return head.isEmpty ? last : head.joined(separator: ", ") + " \(conjunction) " + last
    }
}
