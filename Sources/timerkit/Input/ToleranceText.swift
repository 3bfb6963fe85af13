/// A tolerance as `every --tolerance` takes it: a duration (`5ms`), or a percentage of the interval
/// (`10%`, `2.5%`, at most 100 %).
enum ToleranceText: Equatable {
    case duration(Duration)
    /// Millionths of a percent, so that `2.5%` is exact.
    case percent(microPercent: Int64)

    static let help = "a duration such as 5ms, or a percentage of the interval such as 10%"

    static func parse(_ text: String) throws(UsageError) -> ToleranceText {
        let trimmed = text.trimmingWhitespace
        guard trimmed.last == "%" else { return .duration(try DurationText.duration(text)) }
        var scanner = DurationText.Scanner(trimmed.dropLast())
        guard let number = scanner.decimal(), scanner.isAtEnd else {
            throw UsageError("invalid tolerance '\(text)': expected \(help)")
        }
        let micro = try number.times(1_000_000, text: text)
        guard micro <= 100_000_000 else { throw UsageError("tolerance '\(text)' is more than 100 % of the interval") }
        return .percent(microPercent: micro)
    }

    /// The tolerance for a timer of `interval`.
    func resolved(interval: Duration) -> Duration {
        switch self {
        case .duration(let duration): return duration
        case .percent(let micro):
            let nanoseconds = DurationText.wholeNanoseconds(interval)
            // interval × micro / 10⁸, without overflow for any interval.
            let product = nanoseconds.multipliedFullWidth(by: micro)
            let (quotient, _) = Int64(100_000_000).dividingFullWidth(product)
            return .nanoseconds(quotient)
        }
    }
}

extension DurationText {
    /// A duration's whole nanoseconds (the command line's durations always fit).
    static func wholeNanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
