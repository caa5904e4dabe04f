extension Metrics {
    /// The samples of a counter kept as `"a|b|…" -> count`: one line a key, in key order, each
    /// part of the key the value of the label in the same place (escaped: a part may come from
    /// outside, such as a notification's type).
    package static func counterSamples(_ name: String, _ counts: [String: Int], app: String, labels: [String]) -> String {
        var out = ""
        for key in counts.keys.sorted() {
            let parts = key.split(separator: "|", maxSplits: labels.count - 1, omittingEmptySubsequences: false)
            let pairs = zip(labels, parts).map { label, part in "\(label)=\"\(labelValue(String(part)))\"" }
            out += "\(name){\(app),\(pairs.joined(separator: ","))} \(counts[key] ?? 0)\n"
        }
        return out
    }
}
