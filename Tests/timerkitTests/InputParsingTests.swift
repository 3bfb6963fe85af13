import Foundation
import Testing

@testable import timerkit

@Suite("Command-line input")
struct InputParsingTests {
    @Test(
        "durations read exactly, in every unit, and a bare number is seconds",
        arguments: [
            ("250ms", 250_000_000), ("1.5s", 1_500_000_000), ("90s", 90_000_000_000), ("2m", 120_000_000_000),
            ("1h30m", 5_400_000_000_000), ("1d", 86_400_000_000_000), ("1w", 604_800_000_000_000),
            ("10us", 10_000), ("10µs", 10_000), ("7ns", 7), ("3", 3_000_000_000), ("0.1", 100_000_000),
            (".5s", 500_000_000), ("1m30.5s", 90_500_000_000), ("1h 30m", 5_400_000_000_000), (" 2s ", 2_000_000_000),
            ("0.000000001s", 1), ("0s", 0)
        ] as [(String, Int64)])
    func durations(text: String, nanoseconds: Int64) throws {
        #expect(try DurationText.nanoseconds(text) == nanoseconds)
    }

    @Test(
        "bad durations are refused with a message that names the problem",
        arguments: [
            ("", "empty duration"), ("-1s", "negative duration"), ("5x", "unknown unit 'x'"), ("1h30", "without a unit"),
            ("abc", "invalid duration"), ("1.2.3s", "invalid duration"), ("0.0000000001s", "finer than a nanosecond"),
            ("300y", "unknown unit 'y'"), ("9999999999999w", "too long"), ("1e3s", "unknown unit 'e'"),
            ("9223372036s", "at most 100 years"), ("15000w", "at most 100 years"), ("5300w", "at most 100 years")
        ])
    func badDurations(text: String, problem: String) {
        #expect {
            try DurationText.nanoseconds(text)
        } throws: { error in
            (error as? UsageError)?.message.contains(problem) == true
        }
    }

    @Test("random text never crashes or hangs the duration parser: each gives a value or a clear error")
    func fuzz() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789.smhdwunµ%-+ :eE∞\u{0}🙂")
        var values = 0
        var errors = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...12, using: &random)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &random)! })
            do {
                let value = try DurationText.nanoseconds(text)
                #expect(value >= 0)
                values += 1
            } catch {
                #expect(!error.message.isEmpty)
                errors += 1
            }
        }
        #expect(values + errors == 20_000)
        #expect(values > 0 && errors > 0)
    }

    @Test("a duration printed by the tool reads back as the same duration")
    func describeRoundTrips() throws {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let nanoseconds = Int64.random(in: 0...(400 * 86_400_000_000_000), using: &random) >> Int64.random(in: 0...40, using: &random)
            let text = DurationText.describe(.nanoseconds(nanoseconds))
            #expect(try DurationText.nanoseconds(text) == nanoseconds, "\(text)")
        }
        #expect(DurationText.describe(.milliseconds(200)) == "200ms")
        #expect(DurationText.describe(.seconds(5400)) == "1h30m")
    }

    @Test("a tolerance is a duration or an exact percentage of the interval, at most 100 %")
    func tolerances() throws {
        #expect(try ToleranceText.parse("10%").resolved(interval: .seconds(1)) == .milliseconds(100))
        #expect(try ToleranceText.parse("2.5%").resolved(interval: .seconds(2)) == .milliseconds(50))
        #expect(try ToleranceText.parse("5ms").resolved(interval: .seconds(1)) == .milliseconds(5))
        #expect(throws: UsageError.self) { try ToleranceText.parse("101%") }
        #expect(throws: UsageError.self) { try ToleranceText.parse("%") }
    }

    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    @Test("a time of day is today if it is still to come, else tomorrow, and says so")
    func timeOfDay() throws {
        let morning = Self.date("2026-11-23T08:00:00Z")
        let today = try TimeText.resolve("09:30", now: morning, calendar: Self.utc)
        #expect(today == TimeText(date: Self.date("2026-11-23T09:30:00Z"), movedToTomorrow: false))
        let evening = Self.date("2026-11-23T21:00:00Z")
        let tomorrow = try TimeText.resolve("09:30:15", now: evening, calendar: Self.utc)
        #expect(tomorrow == TimeText(date: Self.date("2026-11-24T09:30:15Z"), movedToTomorrow: true))
    }

    @Test("ISO 8601 date-times read with an offset, in UTC, or in local time, with or without seconds; past, impossible or over-100-year times are refused")
    func isoTimes() throws {
        let now = Self.date("2026-11-23T08:00:00Z")
        #expect(try TimeText.resolve("2026-11-23T20:00:00Z", now: now, calendar: Self.utc).date == Self.date("2026-11-23T20:00:00Z"))
        #expect(try TimeText.resolve("2026-11-23T21:00:00+01:00", now: now, calendar: Self.utc).date == Self.date("2026-11-23T20:00:00Z"))
        #expect(try TimeText.resolve("2026-11-23T20:00", now: now, calendar: Self.utc).date == Self.date("2026-11-23T20:00:00Z"))
        #expect(try TimeText.resolve("2026-11-23T20:00Z", now: now, calendar: Self.utc).date == Self.date("2026-11-23T20:00:00Z"))
        #expect(try TimeText.resolve("2026-11-23T21:00+01:00", now: now, calendar: Self.utc).date == Self.date("2026-11-23T20:00:00Z"))
        #expect(try TimeText.resolve("2026-11-23T15:30-0430", now: now, calendar: Self.utc).date == Self.date("2026-11-23T20:00:00Z"))
        #expect(try TimeText.resolve("2126-11-23T00:00Z", now: now, calendar: Self.utc).date == Self.date("2126-11-23T00:00:00Z"))
        for (text, problem) in [
            ("2026-11-22T20:00:00Z", "in the past"), ("2400-01-01T00:00", "too far ahead"), ("2127-01-01T00:00Z", "too far ahead"),
            ("25:00", "impossible time"), ("12:61", "impossible time"), ("noon", "invalid time"), ("2026-13-01T00:00", "invalid time")
        ] {
            #expect {
                try TimeText.resolve(text, now: now, calendar: Self.utc)
            } throws: { error in
                (error as? UsageError)?.message.contains(problem) == true
            }
        }
    }

    @Test("at's everyday forms: 9am and 9:30pm (12am is midnight), today and tomorrow with a time (never moved), +duration from now")
    func everydayTimes() throws {
        let now = Self.date("2026-11-23T10:00:00Z")
        func resolve(_ text: String) throws -> TimeText { try TimeText.resolve(text, now: now, calendar: Self.utc) }
        #expect(try resolve("9pm") == TimeText(date: Self.date("2026-11-23T21:00:00Z"), movedToTomorrow: false))
        #expect(try resolve("9:30PM") == TimeText(date: Self.date("2026-11-23T21:30:00Z"), movedToTomorrow: false))
        #expect(try resolve("9am") == TimeText(date: Self.date("2026-11-24T09:00:00Z"), movedToTomorrow: true))
        #expect(try resolve("12am") == TimeText(date: Self.date("2026-11-24T00:00:00Z"), movedToTomorrow: true))
        #expect(try resolve("12pm") == TimeText(date: Self.date("2026-11-23T12:00:00Z"), movedToTomorrow: false))
        #expect(try resolve("12:00:30 pm") == TimeText(date: Self.date("2026-11-23T12:00:30Z"), movedToTomorrow: false))
        #expect(try resolve("tomorrow 09:00") == TimeText(date: Self.date("2026-11-24T09:00:00Z"), movedToTomorrow: false))
        #expect(try resolve("Tomorrow 9am") == TimeText(date: Self.date("2026-11-24T09:00:00Z"), movedToTomorrow: false))
        #expect(try resolve("today 18:00") == TimeText(date: Self.date("2026-11-23T18:00:00Z"), movedToTomorrow: false))
        #expect(try resolve("+5m") == TimeText(date: Self.date("2026-11-23T10:05:00Z"), movedToTomorrow: false))
        #expect(try resolve("+1h 30m") == TimeText(date: Self.date("2026-11-23T11:30:00Z"), movedToTomorrow: false))
        for text in ["9am", "9:30pm", "tomorrow 09:00", "today 9am", "+5m"] { #expect(TimeText.looksLikeTime(text), "\(text)") }
        for text in ["90s", "1m 30s", "5"] { #expect(!TimeText.looksLikeTime(text), "\(text)") }
        for (text, problem) in [
            ("today 09:00", "in the past"), ("13pm", "invalid time"), ("0am", "invalid time"), ("9:5am", "invalid time"),
            ("tomorrow", "expected a time of day after 'tomorrow'"), ("tomorrow noon", "expected a time of day"),
            ("+0s", "is now, not a time ahead"), ("+5x", "unknown unit 'x'"), ("+200y", "unknown unit 'y'"), ("9:75pm", "impossible time")
        ] {
            #expect {
                try resolve(text)
            } throws: { error in
                (error as? UsageError)?.message.contains(problem) == true
            }
        }
    }

    @Test("after, at and countdown take their one argument as several words, around options and their values, never past --")
    func wordsJoined() {
        #expect(TimerKitCommand.joiningWords(["after", "1m", "30s", "--", "echo", "a b"]) == ["after", "1m 30s", "--", "echo", "a b"])
        #expect(TimerKitCommand.joiningWords(["at", "tomorrow", "--dry-run", "9am"]) == ["at", "tomorrow 9am", "--dry-run"])
        #expect(TimerKitCommand.joiningWords(["countdown", "--label", "Tea time", "1m", "30s"]) == ["countdown", "--label", "Tea time", "1m 30s"])
        #expect(TimerKitCommand.joiningWords(["after", "--clock", "suspending", "5s", "--", "x"]) == ["after", "--clock", "suspending", "5s", "--", "x"])
        #expect(TimerKitCommand.joiningWords(["every", "1s", "2s"]) == ["every", "1s", "2s"], "every is left alone")
    }
}
