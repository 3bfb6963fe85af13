// Nanosecond arithmetic that saturates at the ends of the 64-bit range instead of trapping (C17).

extension Int64 {
    @inline(__always)
    package func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }

    /// `other - self`, saturating at the ends of the range.
    @inline(__always)
    func duration(to other: Int64) -> Int64 {
        let (difference, overflow) = other.subtractingReportingOverflow(self)
        return overflow ? (other < self ? .min : .max) : difference
    }
}
