/// How long a backlog takes at a rate, as `settle status` says it: "1.2 M due, at 50/s: about
/// 6 h 40 min". An estimate for a person (the count over the rate the stores allow), so it is
/// rounded to what a person plans by, never shown to the second.
package enum DrainTime {
    /// "840", "12.5 k", "1.2 M".
    package static func count(_ n: Int) -> String {
        switch n {
        case ..<1_000: return String(n)
        case ..<1_000_000: return one(Double(n) / 1_000) + " k"
        default: return one(Double(n) / 1_000_000) + " M"
        }
    }

    /// "under a minute", "about 12 min", "about 6 h 40 min", "about 3 d 4 h"; nil rate: "no rate known".
    package static func duration(seconds: Double) -> String {
        guard seconds.isFinite else { return "not at all at this rate" }
        // Saturating: a rate of 1e-30 (from ledger rows) gives 1e31 seconds, finite and beyond Int.
        let minutes = Int(saturating: (seconds / 60).rounded())
        if minutes < 1 { return "under a minute" }
        if minutes < 60 { return "about \(minutes) min" }
        let hours = minutes / 60
        if hours < 24 { return "about \(hours) h" + (minutes % 60 > 0 ? " \(minutes % 60) min" : "") }
        return "about \(hours / 24) d" + (hours % 24 > 0 ? " \(hours % 24) h" : "")
    }

    /// Seconds to drain `due` requests at `rate` a second (infinite at a rate of 0).
    package static func seconds(due: Int, rate: Double) -> Double {
        guard due > 0 else { return 0 }
        return rate > 0 ? Double(due) / rate : .infinity
    }

    /// "1.2 M due, at 50/s: about 6 h 40 min".
    package static func text(due: Int, rate: Double) -> String {
        "\(count(due)) due, at \(Pacer.formatRate(rate))/s: " + (due == 0 ? "nothing to drain" : duration(seconds: seconds(due: due, rate: rate)))
    }

    /// One decimal, none when it is whole: "1.2", "12", "12.5".
    private static func one(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }
}
