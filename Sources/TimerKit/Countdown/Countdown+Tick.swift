import Foundation

extension Countdown {
    /// One tick of a countdown: the value it shows from now until the next tick.
    public struct Tick: Sendable, Hashable, CustomStringConvertible {
        /// The remaining time in whole units, rounded up: what to show. 0 on the final tick only.
        public let value: Int64

        /// The exact remaining time when the tick was decided: `deadline − instant`, never negative.
        public let remaining: Duration

        /// The countdown's unit.
        public let unit: Duration

        /// When the tick was decided, on the countdown's clock: the instant the value changed, or a
        /// little later on a busy machine.
        public let instant: TimerInstant

        /// The countdown's deadline at this tick (a ``Countdown/resume()`` moves it).
        public let deadline: TimerInstant

        /// Whether this is the final tick: the deadline has come. It is delivered exactly once.
        public var isFinished: Bool { value == 0 }

        /// The value shown, as a duration: ``value`` units.
        public var shown: Duration { unit * value }

        /// The value shown, formatted for people with Foundation's `Duration` format styles.
        ///
        /// - ``Style/clock``: `1:05:09` from an hour up, `0:59` below;
        /// - ``Style/units(width:)``: `59 sec`, `1 hr, 5 min, 9 sec` (the width and the words
        ///   follow Foundation and the locale).
        public func formatted(_ style: Style = .clock, locale: Locale = .autoupdatingCurrent) -> String {
            style.format(shown, locale: locale)
        }

        public var description: String {
            "Countdown.Tick(\(value) × \(unit)\(isFinished ? ", finished" : ""), remaining: \(remaining), at: \(instant))"
        }
    }
}

extension Countdown.Tick {
    /// How a countdown's value reads for people.
    public struct Style: Sendable, Hashable {
        enum Kind: Hashable {
            case clock
            case units(Duration.UnitsFormatStyle.UnitWidth)
        }

        let kind: Kind

        /// Hours, minutes and seconds like a clock: `1:05:09`, or `0:59` below an hour.
        public static let clock = Style(kind: .clock)

        /// Hours, minutes and seconds in words, zero units left out: `59 sec`, `1 hr, 5 min`.
        public static func units(width: Duration.UnitsFormatStyle.UnitWidth = .abbreviated) -> Style {
            Style(kind: .units(width))
        }

        /// Formats any duration in this style, as a countdown shows its value: a lap, an elapsed
        /// time, a `Duration` of your own (a fraction of a second is rounded, as Foundation rounds).
        ///
        /// ```swift
        /// Countdown.Tick.Style.clock.format(.seconds(3_909))  // "1:05:09"
        /// ```
        public func format(_ duration: Duration, locale: Locale = .autoupdatingCurrent) -> String {
            switch kind {
            case .clock:
                let pattern: Duration.TimeFormatStyle.Pattern = duration >= .seconds(3_600) ? .hourMinuteSecond : .minuteSecond
                return duration.formatted(.time(pattern: pattern).locale(locale))
            case .units(let width):
                return duration.formatted(
                    .units(allowed: [.hours, .minutes, .seconds], width: width, zeroValueUnits: .hide).locale(locale))
            }
        }

        public static func == (lhs: Style, rhs: Style) -> Bool { lhs.kind == rhs.kind }

        public func hash(into hasher: inout Hasher) {
            switch kind {
            case .clock: hasher.combine(0)
            case .units(let width): hasher.combine(String(describing: width))
            }
        }
    }
}
