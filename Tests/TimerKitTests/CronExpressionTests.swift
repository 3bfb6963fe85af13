import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// Cron expressions: every field form, the shorthands and extensions, the either-day rule, the
/// errors, and the canonical text. Occurrences are read in UTC, where no clock changes.
@Suite("Cron expressions")
struct CronExpressionTests {
    /// The first `count` occurrences after `from` (UTC, "2026-01-01T00:00:00Z"), as UTC text.
    func next(_ cron: String, after from: String, count: Int = 1) throws -> [String] {
        let schedule = try CalendarSchedule(cron: cron, in: TimeZone(identifier: "UTC")!)
        let start = try CalendarSchedule.utcDate(from, in: from)
        return schedule.occurrences(after: start, count: count).map { CalendarSchedule.utcText(Int64($0.timeIntervalSince1970)) }
    }

    @Test("Lists, ranges, steps and names read as cron reads them, and print in canonical form")
    func fieldForms() throws {
        let cases: [(String, String)] = [
            ("*/15 9-17 * * mon-fri", "*/15 9-17 * * 1-5"),
            ("0 9 * * MON-FRI", "0 9 * * 1-5"),
            ("0,30 * * * *", "0,30 * * * *"),
            ("5/15 * * * *", "5/15 * * * *"),
            ("10-40/10 * * * *", "10-40/10 * * * *"),
            ("0 0 1 jan,jul *", "0 0 1 1,7 *"),
            ("0 0 ? * 7", "0 0 * * 0"),
            ("0 0 * * 0-7", "0 0 * * *"),
            ("0 0 * * sat-sun", "0 0 * * 0,6"),
            ("0 0 1-31 * ?", "0 0 * * *"),
            ("30 */5 * * * *", "30 */5 * * * *"),
            ("0 0 0 * * *", "0 0 * * *"),
            ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@monthly", "0 0 1 * *"), ("@weekly", "0 0 * * 0"),
            ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"), ("@hourly", "0 * * * *"),
            ("0 0 L * *", "0 0 L * *"), ("0 0 LW * *", "0 0 LW * *"), ("0 0 15w * *", "0 0 15W * *"),
            ("0 0 * * 5l", "0 0 * * 5L"), ("0 0 * * fri#2,mon#1", "0 0 * * 1#1,5#2"), ("0 0 1,L * 5L", "0 0 1,L * 5L"),
            ("*/75 0-7/10 * * *", "0 0 * * *"), ("0 0 * * 0-0", "0 0 * * 0"), ("0 0 1 * sun-sun", "0 0 1 * 0")
        ]
        for (text, canonical) in cases {
            let expression = try CronExpression(text)
            #expect(expression.description == canonical, "\(text)")
            #expect(try CronExpression(canonical) == expression, "\(text)")
        }
    }

    @Test("Occurrences: steps within working hours, seconds, and a rule that comes once in four years (none in 2100)")
    func occurrences() throws {
        #expect(
            try next("*/15 9-17 * * mon-fri", after: "2026-11-27T17:40:00Z", count: 3) == [  // a Friday
                "2026-11-27T17:45:00Z", "2026-11-30T09:00:00Z", "2026-11-30T09:15:00Z"
            ])
        #expect(try next("30 */5 * * * *", after: "2026-01-01T00:00:30Z", count: 2) == ["2026-01-01T00:05:30Z", "2026-01-01T00:10:30Z"])
        #expect(try next("0 0 29 2 *", after: "2097-01-01T00:00:00Z", count: 2) == ["2104-02-29T00:00:00Z", "2108-02-29T00:00:00Z"])
        #expect(try next("0 12 * 1/3 *", after: "2026-02-01T00:00:00Z", count: 2) == ["2026-04-01T12:00:00Z", "2026-04-02T12:00:00Z"])
        // A date in the past runs from there: the next second is never skipped.
        #expect(try next("* * * * * *", after: "2026-01-01T00:00:59Z", count: 2) == ["2026-01-01T00:01:00Z", "2026-01-01T00:01:01Z"])
    }

    @Test("L is the month's last day, in leap and common years; LW its last weekday")
    func lastDay() throws {
        #expect(try next("0 0 L * *", after: "2027-01-31T00:00:00Z", count: 3) == ["2027-02-28T00:00:00Z", "2027-03-31T00:00:00Z", "2027-04-30T00:00:00Z"])
        #expect(try next("0 0 L 2 *", after: "2027-03-01T00:00:00Z") == ["2028-02-29T00:00:00Z"])
        // 2026-05-31 is a Sunday, 2026-10-31 a Saturday: their last weekdays are Friday the 29th and 30th.
        #expect(try next("0 0 LW 5,10 *", after: "2026-01-01T00:00:00Z", count: 2) == ["2026-05-29T00:00:00Z", "2026-10-30T00:00:00Z"])
    }

    @Test(
        "W is the weekday nearest the day, within the month: Saturday → Friday, Sunday → Monday, a Saturday 1st → Monday the 3rd, a Sunday 31st → Friday the 29th"
    )
    func nearestWeekday() throws {
        // 2026-08-15 is a Saturday; 2026-11-15 a Sunday; 2026-08-01 a Saturday; 2026-05-31 a Sunday.
        #expect(try next("0 0 15W 8 *", after: "2026-01-01T00:00:00Z") == ["2026-08-14T00:00:00Z"])
        #expect(try next("0 0 15W 11 *", after: "2026-01-01T00:00:00Z") == ["2026-11-16T00:00:00Z"])
        #expect(try next("0 0 1W 8 *", after: "2026-01-01T00:00:00Z") == ["2026-08-03T00:00:00Z"])
        #expect(try next("0 0 31W 5 *", after: "2026-01-01T00:00:00Z") == ["2026-05-29T00:00:00Z"])
        // A weekday 15th is itself; a month without a 31st has no 31W.
        #expect(try next("0 0 15W 12 *", after: "2026-01-01T00:00:00Z") == ["2026-12-15T00:00:00Z"])
        #expect(try next("0 0 31W * *", after: "2026-04-01T00:00:00Z") == ["2026-05-29T00:00:00Z"])
    }

    @Test("5L is the month's last Friday; 1#1 its first Monday; #5 only in months that have a fifth")
    func nthAndLastWeekday() throws {
        #expect(try next("0 0 * * 5L", after: "2026-11-01T00:00:00Z", count: 2) == ["2026-11-27T00:00:00Z", "2026-12-25T00:00:00Z"])
        #expect(try next("0 9 * * 1#1", after: "2026-11-01T00:00:00Z", count: 2) == ["2026-11-02T09:00:00Z", "2026-12-07T09:00:00Z"])
        // Fifth Sundays in 2026: March 29, May 31, August 30, November 29.
        #expect(
            try next("0 0 * * sun#5", after: "2026-01-01T00:00:00Z", count: 4) == [
                "2026-03-29T00:00:00Z", "2026-05-31T00:00:00Z", "2026-08-30T00:00:00Z", "2026-11-29T00:00:00Z"
            ])
    }

    @Test("With both day fields restricted, either matching is enough (Vixie cron's rule); with one restricted, that one decides")
    func eitherDay() throws {
        // December 2026: Mondays are the 7th, 14th, 21st, 28th.
        #expect(
            try next("0 0 1,15 12 mon", after: "2026-11-30T12:00:00Z", count: 6) == [
                "2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z", "2026-12-15T00:00:00Z", "2026-12-21T00:00:00Z",
                "2026-12-28T00:00:00Z"
            ])
        #expect(try next("0 0 * 12 mon", after: "2026-11-30T12:00:00Z", count: 2) == ["2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z"])
        #expect(try next("0 0 1,15 12 *", after: "2026-11-30T12:00:00Z", count: 2) == ["2026-12-01T00:00:00Z", "2026-12-15T00:00:00Z"])
        #expect(try next("0 0 L 12 5L", after: "2026-11-30T12:00:00Z", count: 2) == ["2026-12-25T00:00:00Z", "2026-12-31T00:00:00Z"])
    }

    @Test("C17: bad expressions are refused with an error naming the field and why; one that never occurs is refused too")
    func errors() {
        let cases: [(String, String)] = [
            ("* * * *", "expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 4"),
            ("60 * * * *", "minute field, '60': 60 is not in 0–59"),
            ("* 24 * * *", "hour field, '24': 24 is not in 0–23"),
            ("* * 0 * *", "day-of-month field, '0': 0 is not in 1–31"),
            ("* * * 13 *", "month field, '13': 13 is not in 1–12"),
            ("* * * * 8", "day-of-week field, '8': 8 is not in 0–7"),
            ("* * * foo *", "month field, 'foo': 'foo' is not a number or a name (jan–dec)"),
            ("*/0 * * * *", "minute field, '*/0': a step must be at least 1"),
            ("*/x * * * *", "minute field, '*/x': the step 'x' is not a number"),
            ("*/+5 * * * *", "minute field, '*/+5': the step '+5' is not a number"),
            ("99999999999999999999 * * * *", "minute field, '99999999999999999999': 99999999999999999999 is not in 0–59"),
            ("* * * * 1#+2", "day-of-week field, '1#+2': '#' takes the weekday's ordinal in the month, 1 to 5"),
            ("5-1 * * * *", "minute field, '5-1': the range runs backwards (5 is after 1)"),
            ("1,,2 * * * *", "minute field, '1,,2': an empty item at position 2 of the list"),
            ("? * * * *", "minute field, '?': '?' stands for '*' in a day field only"),
            ("* * * * 5#6", "day-of-week field, '5#6': '#' takes the weekday's ordinal in the month, 1 to 5"),
            ("* * L5 * *", "day-of-month field, 'l5': 'L' stands alone or as 'LW', and 'W' follows a single day (15W)"),
            ("* * * * L", "day-of-week field, 'l': 'L' in the day of week follows a weekday: 5L is the month's last Friday"),
            ("@reboot", "@reboot names no time: it is not a schedule"),
            ("@often", "unknown shorthand '@often': use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly")
        ]
        for (text, reason) in cases {
            #expect(throws: TimerError.invalidCalendarRule("cron expression '\(text)': \(reason)"), "\(text)") { try CronExpression(text) }
        }
        #expect(throws: TimerError.invalidCalendarRule("cron expression '0 0 30 2 *' never occurs: no month has a day its day fields name")) {
            try CronExpression("0 0 30 2 *")
        }
        #expect(throws: TimerError.invalidCalendarRule("unknown time zone 'Mars/Olympus' in 'CRON_TZ=Mars/Olympus 0 9 * * *'")) {
            try CalendarSchedule(cron: "CRON_TZ=Mars/Olympus 0 9 * * *")
        }
    }

    @Test(
        "The forms the comparison with croniter leaves out read as the article's table decides: 5-5 is 5; a reversed range is refused; 7/n in the day of week is Sunday alone; a day field matching every day restricts nothing; friL is the last Friday; # and L take one weekday"
    )
    func formsNotCompared() throws {
        // An equal range is its one value (croniter: the whole field).
        #expect(try next("5-5 * * * *", after: "2026-01-01T00:00:00Z", count: 2) == ["2026-01-01T00:05:00Z", "2026-01-01T01:05:00Z"])
        #expect(try CronExpression("0 0 * * 3-3") == CronExpression("0 0 * * 3"))
        // A reversed range is refused (croniter wraps it); sat-sun is Saturday and Sunday.
        #expect(throws: TimerError.invalidCalendarRule("cron expression '0 22-2 * * *': hour field, '22-2': the range runs backwards (22 is after 2)")) {
            try CronExpression("0 22-2 * * *")
        }
        #expect(
            throws: TimerError.invalidCalendarRule("cron expression '0 0 * * fri-mon': day-of-week field, 'fri-mon': the range runs backwards (5 is after 1)")
        ) {
            try CronExpression("0 0 * * fri-mon")
        }
        #expect(try CronExpression("0 0 * * sat-sun") == CronExpression("0 0 * * 0,6"))
        // a/n in the day of week runs to Saturday; 7/n is Sunday alone (croniter: 7/2 is 0,2,4,6).
        #expect(try CronExpression("0 0 * * 1/2") == CronExpression("0 0 * * 1,3,5"))
        #expect(try CronExpression("0 0 * * 0/7") == CronExpression("0 0 * * 0"))
        #expect(try CronExpression("0 0 * * 7/2") == CronExpression("0 0 * * 0"))
        #expect(try CronExpression("0 0 * * 7/1") == CronExpression("0 0 * * 0"))
        // A day field matching every day restricts nothing, beside a restricted one too (croniter: every day).
        #expect(try CronExpression("0 0 1-31 * 1") == CronExpression("0 0 * * 1"))
        #expect(try CronExpression("0 0 */1 * 1") == CronExpression("0 0 * * 1"))
        #expect(try CronExpression("0 0 15 * 0-6") == CronExpression("0 0 15 * *"))
        #expect(try next("0 0 1-31 12 1", after: "2026-11-30T12:00:00Z", count: 2) == ["2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z"])
        // nL takes a weekday name too (croniter: digits only, L5).
        #expect(try CronExpression("0 0 * * friL") == CronExpression("0 0 * * 5L"))
        // # and L follow one weekday, never a range (croniter reads mon-fri#2 as each day's second).
        #expect(
            throws: TimerError.invalidCalendarRule(
                "cron expression '0 0 * * mon-fri#2': day-of-week field, 'mon-fri#2': 'mon-fri' is not a number or a name (sun–sat)")
        ) { try CronExpression("0 0 * * mon-fri#2") }
        #expect(
            throws: TimerError.invalidCalendarRule("cron expression '0 0 * * 1-5L': day-of-week field, '1-5l': '1-5' is not a number or a name (sun–sat)")
        ) { try CronExpression("0 0 * * 1-5L") }
    }

    @Test(
        "For each seed, the canonical text of 1,000 generated expressions reads back as an equal expression, and prints the same again",
        arguments: [20_260_329, 7, 4242] as [UInt64])
    func canonicalTextRoundTrips(seed: UInt64) throws {
        // Seeded (SplitMix64), so that a failure replays: every comment names the seed.
        var random = SeededRandom(seed: seed)
        func item(_ range: ClosedRange<Int>) -> String {
            let low = Int.random(in: range, using: &random)
            let high = Int.random(in: low...range.upperBound, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: return "*"
            case 1: return "\(low)"
            case 2: return "\(low)-\(high)"
            case 3: return "*/\(Int.random(in: 1...range.count, using: &random))"
            case 4: return "\(low)-\(high)/\(Int.random(in: 1...range.count, using: &random))"
            default: return "\(low)/\(Int.random(in: 1...range.count, using: &random))"
            }
        }
        func field(_ range: ClosedRange<Int>, extras: [String] = []) -> String {
            (0..<Int.random(in: 1...3, using: &random)).map { _ in
                extras.isEmpty || Bool.random(using: &random) ? item(range) : extras.randomElement(using: &random)!
            }.joined(separator: ",")
        }
        var checked = 0
        while checked < 1000 {
            let seconds = Bool.random(using: &random) ? field(0...59) + " " : ""
            let text =
                seconds
                + [
                    field(0...59), field(0...23), field(1...31, extras: ["L", "LW", "\(Int.random(in: 1...31, using: &random))W"]), field(1...12),
                    field(
                        0...7,
                        extras: [
                            "\(Int.random(in: 0...7, using: &random))L", "\(Int.random(in: 0...6, using: &random))#\(Int.random(in: 1...5, using: &random))"
                        ])
                ].joined(separator: " ")
            guard let expression = try? CronExpression(text) else { continue }  // a day that never occurs
            let again = try #require(try? CronExpression(expression.description), "seed \(seed): \(text) → \(expression)")
            #expect(again == expression, "seed \(seed): \(text) → \(expression)")
            #expect(again.description == expression.description, "seed \(seed): \(text) → \(expression) → \(again)")
            let schedule = try CalendarSchedule(expression, in: TimeZone(identifier: "Asia/Beirut")!).bounded(from: Date(timeIntervalSince1970: 1.8e9))
                .jittered(upTo: .milliseconds(Int64.random(in: 0...90_000, using: &random)), seed: UInt64.random(in: 0...9, using: &random))
            #expect(try CalendarSchedule(parsing: schedule.description) == schedule, "seed \(seed): \(schedule)")
            checked += 1
        }
    }

    @Test("Bounds keep occurrences at or after the start and before the end; jitter delays each by the same amount on every call, within its maximum")
    func boundsAndJitter() throws {
        let utc = TimeZone(identifier: "UTC")!
        let hourly = try CalendarSchedule(cron: "0 * * * *", in: utc)
        let start = try CalendarSchedule.utcDate("2026-01-01T03:00:00Z", in: "")
        let end = try CalendarSchedule.utcDate("2026-01-01T05:00:00Z", in: "")
        let bounded = try hourly.bounded(from: start, until: end)
        #expect(
            bounded.occurrences(after: .distantPast, count: 5).map { CalendarSchedule.utcText(Int64($0.timeIntervalSince1970)) } == [
                "2026-01-01T03:00:00Z", "2026-01-01T04:00:00Z"
            ])
        #expect(bounded.description == "CRON_TZ=\(utc.identifier) 0 * * * *; from 2026-01-01T03:00:00Z; until 2026-01-01T05:00:00Z")
        #expect(throws: TimerError.invalidCalendarRule("a schedule's end must come after its start")) { try hourly.bounded(from: end, until: start) }

        let jittered = try hourly.jittered(upTo: .seconds(600), seed: 42)
        let first = jittered.occurrences(after: start, count: 48)
        #expect(first == jittered.occurrences(after: start, count: 48))
        let delays = first.map { $0.timeIntervalSince1970.truncatingRemainder(dividingBy: 3600) }
        #expect(delays.allSatisfy { (0...600).contains($0) })
        #expect(Set(delays).count > 40, "delays spread: \(delays)")
        // Another seed spreads differently; the same schedule read back from its text fires at the same times.
        #expect(try hourly.jittered(upTo: .seconds(600), seed: 43).occurrences(after: start, count: 48) != first)
        #expect(try CalendarSchedule(parsing: jittered.description).occurrences(after: start, count: 48) == first)
        // A search from inside an occurrence's jitter window finds that occurrence, not the next.
        #expect(jittered.nextOccurrence(after: first[5].addingTimeInterval(-0.001)) == first[5])
    }

    @Test(
        "C17: a stored calendar rule out of range does not decode (never a trap later); bounds outside the years 1–9999 and dates beyond any calendar are refused or have no occurrence"
    )
    func damagedValues() throws {
        let damaged = #"{"hour":1,"minute":0,"second":0,"weekdays":[-9223372036854775808],"timeZoneIdentifier":"UTC"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CalendarRule.self, from: Data(damaged.utf8)) }
        let rule = try CalendarRule.weekly(on: [2, 6], at: 9, 30, in: TimeZone(identifier: "Europe/Berlin")!)
        #expect(try JSONDecoder().decode(CalendarRule.self, from: JSONEncoder().encode(rule)) == rule)
        let hourly = try CalendarSchedule(cron: "0 * * * *", in: TimeZone(identifier: "UTC")!)
        #expect(throws: TimerError.self) { try hourly.bounded(from: Date(timeIntervalSince1970: 3e11)) }
        #expect(hourly.nextOccurrence(after: Date(timeIntervalSince1970: .nan)) == nil)
        #expect(hourly.nextOccurrence(after: Date(timeIntervalSince1970: 1e300)) == nil)
        #expect(hourly.nextOccurrence(after: .distantPast) != nil && hourly.nextOccurrence(after: .distantFuture) != nil)
        // Bounds given one at a time add up.
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let both = try hourly.bounded(from: start).bounded(until: start.addingTimeInterval(86_400))
        #expect(both.start == start && both.end == start.addingTimeInterval(86_400))
    }

    @Test("C17: a stored schedule whose zone this system does not know reads back and has no occurrences; typed text with it is refused")
    func unknownZone() throws {
        let stored = try JSONDecoder().decode(CalendarSchedule.self, from: Data(#""CRON_TZ=Mars/Olympus 0 9 * * *""#.utf8))
        #expect(stored.timeZoneIdentifier == "Mars/Olympus")
        #expect(stored.nextOccurrence(after: Date()) == nil)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(CalendarSchedule.self, from: Data(#""0 9 * * * * *""#.utf8)) }
    }
}
