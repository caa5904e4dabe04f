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

extension Int64 {
    /// `self - other`, stopping at Int64's bounds instead of trapping.
    package func saturatingSubtracting(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > 0 ? .min : .max
    }

    /// `self * other`, stopping at Int64's bounds instead of trapping.
    package func saturatingMultiplied(by other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }
}

extension Int {
    /// `value` rounded toward zero and clamped to Int's range; NaN is 0 (a duration printed, a
    /// count read from a rate: never a trap for a NaN, an infinity or 1e30).
    package init(saturating value: Double) {
        self = Int(Int64(saturating: value))
    }
}
