import Foundation
import Testing

@testable import TimerKit

/// The differential test of cron expressions against an independent implementation: croniter
/// (PyPI), run by `Scripts/cron-oracle/oracle.py`, which writes each generated expression, its
/// zone, a start and croniter's next occurrences. CI runs the script and this test with
/// `TIMERKIT_CRON_ORACLE` naming its output; without it the test is skipped and says so.
///
/// Every occurrence the two disagree on must fall in one of the documented differences (the
/// table of the article "Calendar schedules"); any other fails the test, with the expression.
@Suite("Cron expressions against croniter")
struct CronOracleTests {
    static let file = ProcessInfo.processInfo.environment["TIMERKIT_CRON_ORACLE"]

    struct Case: Decodable {
        var id: Int
        var expr: String
        var croniter: String
        var zone: String
        var start: Int64
        var next: [Int64]
        var error: String?
    }

    /// The documented differences.
    enum Difference: String, CaseIterable {
        case repeatedFixedTime = "a fixed time in a repeated hour: croniter runs it at both instants, TimerKit at the first"
        case skippedTimeShifted = "a time the clocks skip: TimerKit runs it shifted by the gap"
        case skippedTimeFirstMinute = "a time the clocks skip: croniter runs the first existing minute after the gap, once"
        case secondPassMissed = "a repeated half hour (Lord Howe): croniter misses some second-pass runs of an every-hour schedule"
        case nearestWeekdayClamped = "nW past the month's end (31W in April): croniter takes the weekday nearest the last day, TimerKit no day"
        case neverOccurs = "an expression that never occurs: both refuse it"
    }

    @Test(
        "C17: the next occurrences of ≥ 2,000 generated expressions, in five zones across daylight-saving changes, match croniter's, but for the documented differences",
        .enabled(if: file != nil, "TIMERKIT_CRON_ORACLE names no oracle file: .ci/run makes one with Scripts/cron-oracle/oracle.py"))
    func matchesCroniter() throws {
        let lines = try String(contentsOfFile: Self.file!, encoding: .utf8).split(separator: "\n")
        let decoder = JSONDecoder()
        var counts: [Difference: Int] = [:]
        var unexplained: [String] = []
        var compared = 0
        var agreeingCases = 0
        for line in lines {
            let test = try decoder.decode(Case.self, from: Data(line.utf8))
            let zone = try #require(TimeZone(identifier: test.zone), "zone \(test.zone)")
            let schedule: CalendarSchedule
            do {
                schedule = try CalendarSchedule(cron: test.expr, in: zone)
            } catch {
                if test.next.isEmpty, test.error?.contains("failed to find") == true {
                    counts[.neverOccurs, default: 0] += 1
                } else {
                    unexplained.append("#\(test.id) \(test.expr): TimerKit refuses it (\(error)), croniter does not (\(test.error ?? "no error"))")
                }
                continue
            }
            if test.next.isEmpty {
                unexplained.append("#\(test.id) \(test.expr) [\(test.zone)]: croniter gave nothing (\(test.error ?? "")), TimerKit reads it")
                continue
            }
            // TimerKit's occurrences over the span croniter covered (and one more, to close it).
            var ours: [Int64] = []
            var after = Date(timeIntervalSince1970: Double(test.start))
            while let next = schedule.nextOccurrence(after: after), Int64(next.timeIntervalSince1970) <= test.next.last!, ours.count < 2 * test.next.count {
                ours.append(Int64(next.timeIntervalSince1970))
                after = next
            }
            compared += test.next.count
            let theirs = Set(test.next)
            let mine = Set(ours)
            if theirs == mine {
                agreeingCases += 1
                continue
            }
            let offsets = ZoneOffsets(zone)
            for instant in mine.subtracting(theirs).sorted() {
                if let kind = Self.explainOurs(instant, schedule.expression, offsets) {
                    counts[kind, default: 0] += 1
                } else {
                    unexplained.append(
                        "#\(test.id) \(test.expr) [\(test.zone)] from \(test.start): TimerKit runs at \(Self.reading(instant, offsets)), croniter does not")
                }
            }
            for instant in theirs.subtracting(mine).sorted() {
                if let kind = Self.explainTheirs(instant, schedule.expression, offsets) {
                    counts[kind, default: 0] += 1
                } else {
                    unexplained.append(
                        "#\(test.id) \(test.expr) [\(test.zone)] from \(test.start): croniter runs at \(Self.reading(instant, offsets)), TimerKit does not")
                }
            }
        }
        print("cron oracle: \(lines.count) expressions, \(compared) of croniter's occurrences compared; \(agreeingCases) expressions agree at every occurrence")
        for kind in Difference.allCases { print("cron oracle: \(counts[kind, default: 0]) × \(kind.rawValue)") }
        #expect(lines.count >= 2000)
        #expect(compared >= 900_000)
        #expect(unexplained.count == 0, "unexplained differences, the first: \(unexplained.prefix(20).joined(separator: "\n"))")
    }

    /// The wall-clock reading of `instant`, with its offset, for messages.
    static func reading(_ instant: Int64, _ offsets: ZoneOffsets) -> String {
        let offset = offsets.offset(at: instant)
        return "\(CalendarSchedule.utcText(instant + Int64(offset)).dropLast()) \(offset >= 0 ? "+" : "-")\(abs(offset) / 3600):\(abs(offset) / 60 % 60)"
    }

    static func matches(_ expression: CronExpression, _ local: Int64) -> Bool {
        let time = CivilTime(localSeconds: local)
        return expression.nextMatch(after: CivilTime(localSeconds: local - 1)) == time
    }

    /// Whether the wall clock shows the reading `local` at some instant (the clocks skip it if not).
    static func exists(_ local: Int64, _ offsets: ZoneOffsets) -> Bool {
        let instant = offsets.instants(ofLocal: local).first
        return instant + Int64(offsets.offset(at: instant)) == local
    }

    /// An occurrence of ours croniter lacks.
    static func explainOurs(_ instant: Int64, _ expression: CronExpression, _ offsets: ZoneOffsets) -> Difference? {
        let local = instant + Int64(offsets.offset(at: instant))
        let instants = offsets.instants(ofLocal: local)
        // The second pass of a repeated reading, for an every-hour schedule.
        if instants.second == instant, expression.matchesEveryHour, matches(expression, local) { return .secondPassMissed }
        // A skipped reading that matches, shifted by the gap onto this instant.
        let gap = Int64(offsets.offset(at: instant) - offsets.offset(at: instant - 86_400))
        if gap > 0, matches(expression, local - gap), offsets.instants(ofLocal: local - gap).first == instant { return .skippedTimeShifted }
        return nil
    }

    /// An occurrence of croniter's that TimerKit lacks.
    static func explainTheirs(_ instant: Int64, _ expression: CronExpression, _ offsets: ZoneOffsets) -> Difference? {
        let local = instant + Int64(offsets.offset(at: instant))
        let instants = offsets.instants(ofLocal: local)
        if instants.second == instant, !expression.matchesEveryHour, matches(expression, local) { return .repeatedFixedTime }
        // The first existing minute after a gap in which a skipped reading matched.
        let gap = Int64(offsets.offset(at: instant) - offsets.offset(at: instant - 86_400))
        if gap > 0, let skipped = expression.nextMatch(after: CivilTime(localSeconds: local - gap - 1)), skipped.localSeconds < local,
            !exists(skipped.localSeconds, offsets)
        {
            return .skippedTimeFirstMinute
        }
        // nW past the month's end, clamped by croniter to the last day.
        let time = CivilTime(localSeconds: local)
        let length = CivilTime.daysIn(month: time.month, of: time.year)
        let firstWeekday = CivilTime.weekday(year: time.year, month: time.month, day: 1)
        if time.day == CronExpression.nearestWeekday(to: length, length: length, firstWeekday: firstWeekday),
            CronExpression.values(in: UInt64(expression.nearestWeekdays)).contains(where: { $0 > length })
        {
            return .nearestWeekdayClamped
        }
        return nil
    }
}
