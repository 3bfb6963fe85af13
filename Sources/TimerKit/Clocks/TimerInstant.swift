import Foundation

/// A point in time on one of TimerKit's clocks.
///
/// An instant is a count of nanoseconds since its clock's origin: boot for the continuous and
/// suspending clocks, the Unix epoch for the wall clock, the clock's start for a virtual clock.
/// Instants of different kinds of clock cannot be compared or subtracted. Arithmetic saturates at
/// the ends of the 64-bit range instead of wrapping, and the largest instant (`Int64.max`
/// nanoseconds, about 292 years after the origin) is the end of time: a deadline there never comes.
public struct TimerInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The kind of clock this instant belongs to.
    public let clockKind: TimerClock.Kind

    /// Nanoseconds since the clock's origin.
    public let nanoseconds: Int64

    /// Creates an instant `nanoseconds` after the origin of a clock of the given kind.
    public init(kind: TimerClock.Kind, nanoseconds: Int64) {
        self.clockKind = kind
        self.nanoseconds = nanoseconds
    }

    /// Creates a wall-clock instant from a date.
    ///
    /// Dates beyond the year 2262 saturate to the largest representable instant.
    public init(_ date: Date) {
        let nanoseconds = (date.timeIntervalSince1970 * 1e9).rounded()
        let clamped: Int64 =
            if nanoseconds.isNaN { 0 } else if nanoseconds >= 9.2e18 { .max } else if nanoseconds <= -9.2e18 { .min } else { Int64(nanoseconds) }
        self.init(kind: .wall, nanoseconds: clamped)
    }

    /// The calendar date of a wall-clock instant, or `nil` for the other kinds of clock.
    public var date: Date? {
        guard clockKind == .wall else { return nil }
        return Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
    }

    /// The instant `duration` after this one, saturating at the ends of the range.
    public func advanced(by duration: Duration) -> TimerInstant {
        TimerInstant(kind: clockKind, nanoseconds: nanoseconds.addingSaturating(duration.saturatingNanoseconds))
    }

    /// The duration from this instant to `other`, saturating at the ends of the range.
    ///
    /// - Precondition: both instants belong to the same kind of clock.
    public func duration(to other: TimerInstant) -> Duration {
        precondition(clockKind == other.clockKind, "TimerInstant: cannot measure from a \(clockKind) instant to a \(other.clockKind) instant")
        return .nanoseconds(nanoseconds.duration(to: other.nanoseconds))
    }

    public static func + (lhs: TimerInstant, rhs: Duration) -> TimerInstant { lhs.advanced(by: rhs) }

    public static func - (lhs: TimerInstant, rhs: Duration) -> TimerInstant { lhs.advanced(by: .zero - rhs) }

    public static func - (lhs: TimerInstant, rhs: TimerInstant) -> Duration { rhs.duration(to: lhs) }

    /// - Precondition: both instants belong to the same kind of clock.
    public static func < (lhs: TimerInstant, rhs: TimerInstant) -> Bool {
        precondition(lhs.clockKind == rhs.clockKind, "TimerInstant: cannot compare a \(lhs.clockKind) instant with a \(rhs.clockKind) instant")
        return lhs.nanoseconds < rhs.nanoseconds
    }

    /// A wall-clock instant reads as its ISO 8601 time of day; any other as one offset from its
    /// clock's origin in seconds, exact to the nanosecond: `continuous+1011.589551s`, `virtual+6s`.
    public var description: String {
        if let date { return date.formatted(.iso8601.time(includingFractionalSeconds: true)) }
        let magnitude = nanoseconds.magnitude
        var text = String(magnitude / 1_000_000_000)
        let fraction = magnitude % 1_000_000_000
        if fraction != 0 {
            let digits = String(fraction)
            var padded = String(repeating: "0", count: 9 - digits.count) + digits
            while padded.last == "0" { padded.removeLast() }
            text += "." + padded
        }
        return "\(clockKind)\(nanoseconds < 0 ? "-" : "+")\(text)s"
    }
}
