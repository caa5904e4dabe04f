/// Something a store's verification learned beyond its answer about the order (the App Store:
/// that the buyer's Apple Account is the order's user's), which the store's module records
/// when the pass keeps the verification (`LearnedFacts` in the engine). The core carries it
/// without reading it.
package protocol LearnedFact: Sendable {
    /// Whether `other` is the same fact (for comparing verifications).
    func isSame(as other: any LearnedFact) -> Bool
}

extension LearnedFact where Self: Equatable {
    package func isSame(as other: any LearnedFact) -> Bool { (other as? Self) == self }
}
