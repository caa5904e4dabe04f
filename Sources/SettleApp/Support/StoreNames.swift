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

    /// Every store's help phrase for `topic` (`StoreDescriptor.help`), joined by `conjunction`.
    static func help(_ topic: String, _ conjunction: String = "or") -> String {
        StoreRegistry.phrase(topic, conjunction)
    }

    /// Every store's help phrase for `topic`, in registration order.
    static func phrases(_ topic: String) -> [String] {
        StoreRegistry.phrases(topic)
    }

    /// Every store's help sentence for `topic`, one after another.
    static func sentences(_ topic: String) -> String {
        StoreRegistry.descriptors.compactMap { $0.help[topic] }.joined(separator: " ")
    }

    /// `text` in lines of at most `width` columns for help: it starts at `column` of its first
    /// line, and each later line is indented by `indent` spaces.
    static func wrap(_ text: String, column: Int = 0, indent: Int = 0, width: Int = 94) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let room = width - (lines.isEmpty ? column : indent)
            if !line.isEmpty && line.count + 1 + word.count > room {
                lines.append(line)
                line = String(word)
            } else {
                line += (line.isEmpty ? "" : " ") + word
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n" + String(repeating: " ", count: indent))
    }

    /// "a", "a and b", "a, b and c".
    static func list(_ names: [String], _ conjunction: String) -> String {
        guard let last = names.last else { return "" }
        let head = names.dropLast()
        return head.isEmpty ? last : head.joined(separator: ", ") + " \(conjunction) " + last
    }
}
