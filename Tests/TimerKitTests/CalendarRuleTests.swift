import Foundation
import Testing

@testable import TimerKit

/// Calendar rules across daylight-saving transitions, in two zones.
@Suite("Calendar rules")
struct CalendarRuleTests {
    func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    func occurrences(_ rule: CalendarRule, from start: String, count: Int) -> [Date] {
        var dates: [Date] = []
        var current = date(start)
        while dates.count < count, let next = rule.nextOccurrence(after: current) {
            dates.append(next)
            current = next
        }
        return dates
    }

    @Test("A daily 02:30 in New York occurs once on the spring-forward day, at 03:30 EDT, and at 02:30 on the days around it")
    func springForwardNewYork() async throws {
        let rule = try CalendarRule.daily(at: 2, 30, in: TimeZone(identifier: "America/New_York")!)
        // 2026-03-08: clocks jump from 02:00 EST to 03:00 EDT.
        #expect(
            occurrences(rule, from: "2026-03-06T12:00:00Z", count: 4) == [
                date("2026-03-07T07:30:00Z"),  // 02:30 EST
                date("2026-03-08T07:30:00Z"),  // 03:30 EDT: 02:30 does not exist
                date("2026-03-09T06:30:00Z"),  // 02:30 EDT
                date("2026-03-10T06:30:00Z")
            ])
    }

    @Test("A daily 01:30 in New York occurs once on the fall-back day, at its first instance (EDT)")
    func fallBackNewYork() async throws {
        let rule = try CalendarRule.daily(at: 1, 30, in: TimeZone(identifier: "America/New_York")!)
        // 2026-11-01: clocks go back from 02:00 EDT to 01:00 EST; 01:30 happens twice.
        #expect(
            occurrences(rule, from: "2026-10-31T00:00:00Z", count: 3) == [
                date("2026-10-31T05:30:00Z"),  // 01:30 EDT
                date("2026-11-01T05:30:00Z"),  // the first 01:30 (EDT), not the second (06:30Z, EST)
                date("2026-11-02T06:30:00Z")  // 01:30 EST
            ])
    }

    @Test("Berlin: a daily 02:30 occurs once on both transition days (03:30 CEST in spring; the first 02:30, CEST, in autumn)")
    func berlin() async throws {
        let rule = try CalendarRule.daily(at: 2, 30, in: TimeZone(identifier: "Europe/Berlin")!)
        // 2026-03-29: 02:00 CET → 03:00 CEST. 2026-10-25: 03:00 CEST → 02:00 CET.
        #expect(occurrences(rule, from: "2026-03-28T12:00:00Z", count: 2) == [date("2026-03-29T01:30:00Z"), date("2026-03-30T00:30:00Z")])
        #expect(occurrences(rule, from: "2026-10-24T12:00:00Z", count: 2) == [date("2026-10-25T00:30:00Z"), date("2026-10-26T01:30:00Z")])
    }

    @Test("A weekly rule occurs only on its weekdays")
    func weekly() async throws {
        // Mondays (2) and Fridays (6) at 09:00 UTC, from Wednesday 2026-11-25.
        let rule = try CalendarRule.weekly(on: [2, 6], at: 9, in: TimeZone(identifier: "UTC")!)
        #expect(
            occurrences(rule, from: "2026-11-25T12:00:00Z", count: 3) == [
                date("2026-11-27T09:00:00Z"), date("2026-11-30T09:00:00Z"), date("2026-12-04T09:00:00Z")
            ])
    }

    @Test("C17: a rule with a field out of range, or no weekday, is refused with an error that names it")
    func badRules() {
        let utc = TimeZone(identifier: "UTC")!
        #expect(throws: TimerError.invalidCalendarRule("hour 24 is not in 0–23")) { try CalendarRule.daily(at: 24, in: utc) }
        #expect(throws: TimerError.invalidCalendarRule("minute 60 is not in 0–59")) { try CalendarRule.daily(at: 1, 60, in: utc) }
        #expect(throws: TimerError.invalidCalendarRule("a weekly rule needs at least one weekday")) { try CalendarRule.weekly(on: [], at: 1, in: utc) }
        #expect(throws: TimerError.invalidCalendarRule("weekdays are 1 (Sunday) to 7 (Saturday)")) { try CalendarRule.weekly(on: [0], at: 1, in: utc) }
    }

    @Test("A rule reads from text as systemd writes days and times: ranges, lists, names, daily, weekdays, weekends; it prints the same way")
    func rulesFromText() throws {
        let utc = TimeZone(identifier: "UTC")!
        let cases: [(String, Set<Int>?, Int, Int, Int, String)] = [
            ("mon..fri 09:00", [2, 3, 4, 5, 6], 9, 0, 0, "Mon..Fri 09:00:00"),
            ("09:30", nil, 9, 30, 0, "daily 09:30:00"),
            ("daily 9:05:07", nil, 9, 5, 7, "daily 09:05:07"),
            ("Sat,Sun 10:15", [1, 7], 10, 15, 0, "Sat,Sun 10:15:00"),
            ("fri..mon 08:00", [6, 7, 1, 2], 8, 0, 0, "Mon,Fri..Sun 08:00:00"),
            ("weekdays 18:00", [2, 3, 4, 5, 6], 18, 0, 0, "Mon..Fri 18:00:00"),
            ("weekends 07:00", [1, 7], 7, 0, 0, "Sat,Sun 07:00:00"),
            ("monday,wednesday,friday 12:00", [2, 4, 6], 12, 0, 0, "Mon,Wed,Fri 12:00:00"),
            ("mon..sun 00:00", nil, 0, 0, 0, "daily 00:00:00")
        ]
        for (text, weekdays, hour, minute, second, description) in cases {
            let rule = try CalendarRule(text, in: utc)
            #expect(rule.weekdays == weekdays, "\(text)")
            #expect([rule.hour, rule.minute, rule.second] as [Int] == [hour, minute, second] as [Int], "\(text)")
            // The zone's identifier is the system's spelling of it (GMT on Linux, UTC elsewhere).
            #expect(rule.description == "\(description) \(utc.identifier)", "\(text)")
            // What it prints reads back as the same rule.
            #expect(try CalendarRule(description, in: utc) == rule, "\(description)")
        }
    }

    @Test("C17: text that is not a rule is refused with an error that names the part it could not read")
    func badRuleText() {
        let utc = TimeZone(identifier: "UTC")!
        let cases: [(String, String)] = [
            ("", "'' is not days and a time, as in 'mon..fri 09:00' or '18:30'"),
            ("mon fri 09:00", "'mon fri 09:00' is not days and a time, as in 'mon..fri 09:00' or '18:30'"),
            ("mon 9", "'9' is not a time of day: expected HH:MM or HH:MM:SS, as in 09:00"),
            (
                "mon..fry 09:00",
                "unknown day 'fry' in 'mon..fry 09:00': use mon, tue, wed, thu, fri, sat, sun, ranges such as mon..fri, daily, weekdays or weekends"
            ),
            ("mon,,fri 09:00", "'' in 'mon,,fri 09:00' is not a day or a range of days such as mon..fri"),
            ("daily 24:00", "hour 24 is not in 0–23"),
            ("daily 09:60", "minute 60 is not in 0–59")
        ]
        for (text, reason) in cases {
            #expect(throws: TimerError.invalidCalendarRule(reason), "\(text)") { try CalendarRule(text, in: utc) }
        }
    }

    @Test("A weekday rule read from text occurs on those days only, across a DST change in Berlin (09:00 local stays 09:00)")
    func textRuleAcrossDST() throws {
        let rule = try CalendarRule("mon..fri 09:00", in: TimeZone(identifier: "Europe/Berlin")!)
        // Friday 2026-10-23 to Tuesday 2026-10-27; clocks go back on Sunday 2026-10-25.
        #expect(
            occurrences(rule, from: "2026-10-23T00:00:00Z", count: 3) == [
                date("2026-10-23T07:00:00Z"),  // Fri 09:00 CEST
                date("2026-10-26T08:00:00Z"),  // Mon 09:00 CET
                date("2026-10-27T08:00:00Z")
            ])
    }
}
