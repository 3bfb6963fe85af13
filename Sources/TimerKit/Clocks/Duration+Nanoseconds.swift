extension Duration {
    /// The duration in whole nanoseconds, or `nil` when that does not fit in 64 bits (C17).
    ///
    /// Sub-nanosecond parts are truncated toward zero.
    package var exactNanoseconds: Int64? {
        if self == .zero { return 0 }  // the common tolerance, without 128-bit arithmetic
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? nil : sum
    }

    /// The duration in whole nanoseconds, saturating at the ends of the 64-bit range.
    package var saturatingNanoseconds: Int64 {
        exactNanoseconds ?? (self < .zero ? Int64.min : Int64.max)
    }

    /// A number of seconds in whole nanoseconds, saturating at the ends of the 64-bit range (NaN
    /// is zero): for differences of dates read from a store, which may lie centuries apart.
    package static func saturatingSeconds(_ seconds: Double) -> Duration {
        let nanoseconds = (seconds * 1e9).rounded()
        if nanoseconds.isNaN { return .zero }
        // 2^63 is the first Double past Int64.max; -2^63 is Int64.min itself.
        if nanoseconds >= 9_223_372_036_854_775_808.0 { return .nanoseconds(Int64.max) }
        return .nanoseconds(Int64(max(nanoseconds, -9_223_372_036_854_775_808.0)))
    }
}

extension Duration {
    /// Converts a `TimeInterval`-style number of seconds to a duration, rejecting what no timer can
    /// use (C17): NaN, infinities, and magnitudes whose nanoseconds overflow 64 bits.
    ///
    /// `Duration.seconds(_:)` traps or rounds on such input; use this where the number comes from
    /// a user, a file, or older `TimeInterval` code.
    ///
    /// - Throws: ``TimerError/nonFiniteDuration`` or ``TimerError/durationOverflow``.
    public static func validatedSeconds(_ seconds: Double) throws(TimerError) -> Duration {
        guard seconds.isFinite else { throw .nonFiniteDuration }
        let nanoseconds = (seconds * 1e9).rounded(.towardZero)
        guard nanoseconds > -9.223372036854775e18, nanoseconds < 9.223372036854775e18 else {
            throw .durationOverflow
        }
        return .nanoseconds(Int64(nanoseconds))
    }
}
