/// A count as people read it: "1 order", "2 orders", never "1 orders". The one place every
/// printed count of things goes through, so a new message cannot get it wrong by hand.
package enum Plural {
    /// `n` and the noun, plural unless `n` is 1: `count(1, "order")` is "1 order"; a plural
    /// that is not the noun + "s" is given (`count(2, "entry", "entries")`).
    package static func count<N: BinaryInteger>(_ n: N, _ singular: String, _ plural: String? = nil) -> String {
        "\(n) " + (n == 1 ? singular : plural ?? singular + "s")
    }

    /// The verb agreeing with `n` things: `verb(1, "waits", "wait")` is "waits".
    package static func verb<N: BinaryInteger>(_ n: N, _ singular: String, _ plural: String) -> String {
        n == 1 ? singular : plural
    }
}
