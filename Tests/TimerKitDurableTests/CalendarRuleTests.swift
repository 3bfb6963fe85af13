import Foundation
import Testing
@testable import TimerKitDurable

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
        #expect(occurrences(rule, from: "2026-03-06T12:00:00Z", count: 4) == [
            date("2026-03-07T07:30:00Z"),  // 02:30 EST
            date("2026-03-08T07:30:00Z"),  // 03:30 EDT: 02:30 does not exist
            date("2026-03-09T06:30:00Z"),  // 02:30 EDT
            date("2026-03-10T06:30:00Z"),
        ])
    }

    @Test("A daily 01:30 in New York occurs once on the fall-back day, at its first instance (EDT)")
    func fallBackNewYork() async throws {
        let rule = try CalendarRule.daily(at: 1, 30, in: TimeZone(identifier: "America/New_York")!)
        // 2026-11-01: clocks go back from 02:00 EDT to 01:00 EST; 01:30 happens twice.
        #expect(occurrences(rule, from: "2026-10-31T00:00:00Z", count: 3) == [
            date("2026-10-31T05:30:00Z"),  // 01:30 EDT
            date("2026-11-01T05:30:00Z"),  // the first 01:30 (EDT), not the second (06:30Z, EST)
            date("2026-11-02T06:30:00Z"),  // 01:30 EST
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
        #expect(occurrences(rule, from: "2026-11-25T12:00:00Z", count: 3) == [
            date("2026-11-27T09:00:00Z"), date("2026-11-30T09:00:00Z"), date("2026-12-04T09:00:00Z"),
        ])
    }

    @Test("C17: a rule with a field out of range, or no weekday, is refused with an error that names it")
    func badRules() {
        let utc = TimeZone(identifier: "UTC")!
        #expect(throws: DurableTimerError.invalidRule("hour 24 is not in 0–23")) { try CalendarRule.daily(at: 24, in: utc) }
        #expect(throws: DurableTimerError.invalidRule("minute 60 is not in 0–59")) { try CalendarRule.daily(at: 1, 60, in: utc) }
        #expect(throws: DurableTimerError.invalidRule("a weekly rule needs at least one weekday")) { try CalendarRule.weekly(on: [], at: 1, in: utc) }
        #expect(throws: DurableTimerError.invalidRule("weekdays are 1 (Sunday) to 7 (Saturday)")) { try CalendarRule.weekly(on: [0], at: 1, in: utc) }
    }
}
