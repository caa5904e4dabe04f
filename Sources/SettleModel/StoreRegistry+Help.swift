extension StoreRegistry {
    /// Every store's help phrase for `topic` (`StoreDescriptor.help`), in registration order.
    package static func phrases(_ topic: String) -> [String] {
        descriptors.compactMap { $0.help[topic] }
    }

    /// Every store's phrase for `topic`, as prose: "a", "a or b", "a, b or c".
    package static func phrase(_ topic: String, _ conjunction: String = "or") -> String {
        let all = phrases(topic)
        guard let last = all.last else { return "" }
        let head = all.dropLast()
        return head.isEmpty ? last : head.joined(separator: ", ") + " \(conjunction) " + last
    }
}
