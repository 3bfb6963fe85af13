// Nanosecond arithmetic that saturates at the ends of the 64-bit range instead of trapping (C17).

extension Int64 {
    @inline(__always)
    package func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }

    /// `self · other`, saturating at the ends of the range (a count of units, a grid offset).
    @inline(__always)
    package func multipliedSaturating(by other: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) != (other < 0) ? .min : .max) : product
    }

    /// `other - self`, saturating at the ends of the range.
    @inline(__always)
    package func duration(to other: Int64) -> Int64 {
        let (difference, overflow) = other.subtractingReportingOverflow(self)
        return overflow ? (other < self ? .min : .max) : difference
    }
}

extension Int {
    /// `self + other`, saturating at the ends of the range: counts of deadlines and fires, which on
    /// watchOS (`arm64_32`, a 32-bit `Int`) could pass `Int.max` — 2³¹ skipped deadlines of a
    /// 1 µs timer suspended for 36 minutes — and must not trap (C17).
    @inline(__always)
    package func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }
}
