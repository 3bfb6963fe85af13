import Foundation
import Testing

@testable import TimerKit

/// What each form of schedule does on the days the clocks change, in five zones: New York and
/// Berlin (one-hour changes at night), Lord Howe (a 30-minute change), Santiago and Beirut
/// (changes at midnight). Every expectation is a wall-clock reading with its offset.
@Suite("Calendar schedules across daylight-saving changes")
struct CalendarScheduleDSTTests {
    /// The readings of the first `count` occurrences after the reading `from` ("2026-03-08 00:30 -05:00").
    func readings(_ cron: String, in zone: String, from: String, count: Int) throws -> [String] {
        let schedule = try CalendarSchedule(cron: cron, in: TimeZone(identifier: zone)!)
        return schedule.occurrences(after: Self.instant(from), count: count).map { Self.reading($0, in: schedule.timeZone!) }
    }

    static func instant(_ reading: String) -> Date {
        let parts = reading.split(whereSeparator: { " -:+".contains($0) }).map { Int($0)! }
        let sign = reading.contains("+") ? 1 : -1
        let local = CivilTime(year: parts[0], month: parts[1], day: parts[2], hour: parts[3], minute: parts[4]).localSeconds
        return Date(timeIntervalSince1970: Double(local - Int64(sign * (parts[5] * 3600 + parts[6] * 60))))
    }

    static func reading(_ date: Date, in zone: TimeZone) -> String {
        let offset = zone.secondsFromGMT(for: date)
        let time = CivilTime(localSeconds: Int64(date.timeIntervalSince1970) + Int64(offset))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let sign = offset < 0 ? "-" : "+"
        return
            "\(time.year)-\(two(time.month))-\(two(time.day)) \(two(time.hour)):\(two(time.minute)) \(sign)\(two(abs(offset) / 3600)):\(two(abs(offset) / 60 % 60))"
    }

    // MARK: New York: 2026-03-08 02:00 → 03:00; 2026-11-01 02:00 → 01:00

    @Test("New York, spring forward: hourly and every 30 minutes follow elapsed time; a fixed 02:30 runs once, at 03:30")
    func newYorkSpring() throws {
        let zone = "America/New_York"
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-03-08 00:30 -05:00", count: 3) == [
                "2026-03-08 01:00 -05:00", "2026-03-08 03:00 -04:00", "2026-03-08 04:00 -04:00"
            ])
        #expect(
            try readings("*/30 * * * *", in: zone, from: "2026-03-08 01:00 -05:00", count: 3) == [
                "2026-03-08 01:30 -05:00", "2026-03-08 03:00 -04:00", "2026-03-08 03:30 -04:00"
            ])
        #expect(
            try readings("30 2 * * *", in: zone, from: "2026-03-07 00:00 -05:00", count: 3) == [
                "2026-03-07 02:30 -05:00", "2026-03-08 03:30 -04:00", "2026-03-09 02:30 -04:00"
            ])
    }

    @Test("New York, fall back: hourly and every 30 minutes run in both passes of the repeated hour; a fixed 01:30 runs once, in the first")
    func newYorkFall() throws {
        let zone = "America/New_York"
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-11-01 00:30 -04:00", count: 3) == [
                "2026-11-01 01:00 -04:00", "2026-11-01 01:00 -05:00", "2026-11-01 02:00 -05:00"
            ])
        #expect(
            try readings("*/30 * * * *", in: zone, from: "2026-11-01 00:30 -04:00", count: 5) == [
                "2026-11-01 01:00 -04:00", "2026-11-01 01:30 -04:00", "2026-11-01 01:00 -05:00", "2026-11-01 01:30 -05:00", "2026-11-01 02:00 -05:00"
            ])
        #expect(
            try readings("30 1 * * *", in: zone, from: "2026-10-31 00:00 -04:00", count: 3) == [
                "2026-10-31 01:30 -04:00", "2026-11-01 01:30 -04:00", "2026-11-02 01:30 -05:00"
            ])
    }

    @Test("New York: a search that starts inside the repeated hour finds the second pass for an hourly form, and tomorrow for a fixed time")
    func newYorkFromInsideTheRepeatedHour() throws {
        let zone = "America/New_York"
        #expect(try readings("*/30 * * * *", in: zone, from: "2026-11-01 01:45 -04:00", count: 2) == ["2026-11-01 01:00 -05:00", "2026-11-01 01:30 -05:00"])
        #expect(try readings("*/30 * * * *", in: zone, from: "2026-11-01 01:10 -04:00", count: 2) == ["2026-11-01 01:30 -04:00", "2026-11-01 01:00 -05:00"])
        #expect(try readings("30 1 * * *", in: zone, from: "2026-11-01 01:10 -05:00", count: 1) == ["2026-11-02 01:30 -05:00"])
    }

    @Test("New York: a search that starts just after the gap still finds the skipped times' shifted instants; several skipped times each shift")
    func newYorkFromJustAfterTheGap() throws {
        let zone = "America/New_York"
        #expect(try readings("30 2 * * *", in: zone, from: "2026-03-08 03:10 -04:00", count: 2) == ["2026-03-08 03:30 -04:00", "2026-03-09 02:30 -04:00"])
        #expect(
            try readings("*/15 2 * * *", in: zone, from: "2026-03-08 00:00 -05:00", count: 5) == [
                "2026-03-08 03:00 -04:00", "2026-03-08 03:15 -04:00", "2026-03-08 03:30 -04:00", "2026-03-08 03:45 -04:00", "2026-03-09 02:00 -04:00"
            ])
        #expect(try readings("*/20 */2 * * *", in: zone, from: "2026-03-08 03:00 -04:00", count: 2) == ["2026-03-08 03:20 -04:00", "2026-03-08 03:40 -04:00"])
    }

    // MARK: Berlin: 2026-03-29 02:00 → 03:00; 2026-10-25 03:00 → 02:00

    @Test("Berlin: hourly follows elapsed time across both changes; a fixed 02:30 runs at 03:30 in spring and once, in summer time, in autumn")
    func berlin() throws {
        let zone = "Europe/Berlin"
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-03-29 00:30 +01:00", count: 3) == [
                "2026-03-29 01:00 +01:00", "2026-03-29 03:00 +02:00", "2026-03-29 04:00 +02:00"
            ])
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-10-25 01:30 +02:00", count: 3) == [
                "2026-10-25 02:00 +02:00", "2026-10-25 02:00 +01:00", "2026-10-25 03:00 +01:00"
            ])
        #expect(try readings("30 2 * * *", in: zone, from: "2026-03-29 00:00 +01:00", count: 2) == ["2026-03-29 03:30 +02:00", "2026-03-30 02:30 +02:00"])
        #expect(try readings("30 2 * * *", in: zone, from: "2026-10-25 00:00 +02:00", count: 2) == ["2026-10-25 02:30 +02:00", "2026-10-26 02:30 +01:00"])
    }

    @Test(
        "Berlin: an hour step (0 */2) has fixed hours, not elapsed time: the repeated 02:00 runs once, in summer time, and the skipped 02:00 runs at 03:00, as 0,2,…,22 does"
    )
    func hourStepIsFixedHours() throws {
        let zone = "Europe/Berlin"
        let autumn = ["2026-10-25 00:00 +02:00", "2026-10-25 02:00 +02:00", "2026-10-25 04:00 +01:00"]
        let spring = ["2026-03-29 00:00 +01:00", "2026-03-29 03:00 +02:00", "2026-03-29 04:00 +02:00"]
        #expect(try readings("0 */2 * * *", in: zone, from: "2026-10-24 23:30 +02:00", count: 3) == autumn)
        #expect(try readings("0 */2 * * *", in: zone, from: "2026-03-28 23:30 +01:00", count: 3) == spring)
        #expect(try readings("0 0,2,4,6,8,10,12,14,16,18,20,22 * * *", in: zone, from: "2026-10-24 23:30 +02:00", count: 3) == autumn)
    }

    // MARK: Lord Howe: a 30-minute change. 2026-04-05 02:00 → 01:30; 2026-10-04 02:00 → 02:30

    @Test("Lord Howe, a 30-minute fall back: every 30 minutes runs in both passes of the repeated half hour; a fixed 01:45 once")
    func lordHoweFall() throws {
        let zone = "Australia/Lord_Howe"
        #expect(
            try readings("*/30 * * * *", in: zone, from: "2026-04-05 00:30 +11:00", count: 4) == [
                "2026-04-05 01:00 +11:00", "2026-04-05 01:30 +11:00", "2026-04-05 01:30 +10:30", "2026-04-05 02:00 +10:30"
            ])
        // No reading at :00 repeats: the hourly interval is 90 minutes across the change.
        #expect(try readings("0 * * * *", in: zone, from: "2026-04-05 00:30 +11:00", count: 2) == ["2026-04-05 01:00 +11:00", "2026-04-05 02:00 +10:30"])
        #expect(try readings("45 1 * * *", in: zone, from: "2026-04-05 00:00 +11:00", count: 2) == ["2026-04-05 01:45 +11:00", "2026-04-06 01:45 +10:30"])
    }

    @Test("Lord Howe, a 30-minute spring forward: a skipped 02:00 and 02:15 move on by the 30-minute gap")
    func lordHoweSpring() throws {
        let zone = "Australia/Lord_Howe"
        #expect(
            try readings("*/30 * * * *", in: zone, from: "2026-10-04 01:00 +10:30", count: 3) == [
                "2026-10-04 01:30 +10:30", "2026-10-04 02:30 +11:00", "2026-10-04 03:00 +11:00"
            ])
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-10-04 00:30 +10:30", count: 3) == [
                "2026-10-04 01:00 +10:30", "2026-10-04 02:30 +11:00", "2026-10-04 03:00 +11:00"
            ])
        #expect(try readings("15 2 * * *", in: zone, from: "2026-10-04 00:00 +10:30", count: 2) == ["2026-10-04 02:45 +11:00", "2026-10-05 02:15 +11:00"])
    }

    // MARK: Santiago: changes at midnight. 2026-04-05 00:00 → 04-04 23:00; 2026-09-06 00:00 → 01:00

    @Test("Santiago: a midnight that does not exist runs at 01:00 (on its own day, a Sunday); the repeated 23:00 hour runs twice for hourly only")
    func santiago() throws {
        let zone = "America/Santiago"
        #expect(try readings("0 0 * * *", in: zone, from: "2026-09-05 00:00 -04:00", count: 2) == ["2026-09-06 01:00 -03:00", "2026-09-07 00:00 -03:00"])
        #expect(try readings("0 0 * * 0", in: zone, from: "2026-09-01 00:00 -04:00", count: 2) == ["2026-09-06 01:00 -03:00", "2026-09-13 00:00 -03:00"])
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-09-05 22:30 -04:00", count: 3) == [
                "2026-09-05 23:00 -04:00", "2026-09-06 01:00 -03:00", "2026-09-06 02:00 -03:00"
            ])
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-04-04 22:30 -03:00", count: 3) == [
                "2026-04-04 23:00 -03:00", "2026-04-04 23:00 -04:00", "2026-04-05 00:00 -04:00"
            ])
        #expect(try readings("30 23 * * *", in: zone, from: "2026-04-04 00:00 -03:00", count: 2) == ["2026-04-04 23:30 -03:00", "2026-04-05 23:30 -04:00"])
        #expect(try readings("0 0 * * *", in: zone, from: "2026-04-03 12:00 -03:00", count: 2) == ["2026-04-04 00:00 -03:00", "2026-04-05 00:00 -04:00"])
    }

    // MARK: Beirut: changes at midnight. 2026-03-29 00:00 → 01:00; 2026-10-25 00:00 → 10-24 23:00

    @Test("Beirut: Sunday's missing midnight runs at 01:00; Saturday's repeated 23:00 hour runs twice for hourly, once for a fixed 23:30")
    func beirut() throws {
        let zone = "Asia/Beirut"
        #expect(
            try readings("0 0 * * *", in: zone, from: "2026-03-27 12:00 +02:00", count: 3) == [
                "2026-03-28 00:00 +02:00", "2026-03-29 01:00 +03:00", "2026-03-30 00:00 +03:00"
            ])
        #expect(try readings("30 0 * * sun", in: zone, from: "2026-03-27 12:00 +02:00", count: 1) == ["2026-03-29 01:30 +03:00"])
        #expect(
            try readings("0 * * * *", in: zone, from: "2026-10-24 22:30 +03:00", count: 3) == [
                "2026-10-24 23:00 +03:00", "2026-10-24 23:00 +02:00", "2026-10-25 00:00 +02:00"
            ])
        #expect(try readings("30 23 * * 6", in: zone, from: "2026-10-24 12:00 +03:00", count: 2) == ["2026-10-24 23:30 +03:00", "2026-10-31 23:30 +02:00"])
    }

    @Test("Across a year of changes in the five zones, an hourly schedule never runs twice at one instant nor leaves more than 90 minutes between runs")
    func hourlyNeverDoublesOrGaps() throws {
        for zone in ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago", "Asia/Beirut"] {
            let schedule = try CalendarSchedule(cron: "0 * * * *", in: TimeZone(identifier: zone)!)
            let runs = schedule.occurrences(after: Self.instant("2026-01-01 00:00 +00:00"), count: 24 * 366)
            let gaps = zip(runs, runs.dropFirst()).map { $1.timeIntervalSince($0) }
            #expect(gaps.allSatisfy { $0 > 0 && $0 <= 5400 }, "\(zone): gaps \(Set(gaps).sorted())")
            #expect(gaps.filter { $0 != 3600 }.count <= 4, "\(zone): \(gaps.filter { $0 != 3600 })")
        }
    }
}
