/// Whole numbers from numbers that came from outside (a Retry-After header, Apple's JSON):
/// `Int64(Double)` traps on NaN, infinity and anything beyond ±9.2e18, and one bad header
/// must never kill a pass with orders in flight. These clamp instead.
extension Int64 {
    /// `value` rounded toward zero and clamped to Int64's range; NaN is 0.
    package init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.2e18 {
            self = .max
        } else if value <= -9.2e18 {
            self = .min
        } else {
            self = Int64(value)
        }
    }

    /// `self + other`, stopping at Int64's bounds instead of trapping.
    package func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}
