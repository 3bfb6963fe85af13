import Foundation
import TimerKit

/// What claiming a timer at `now` means under its misfire policy: whether its handler runs, what
/// the fire stands for, and where the timer goes next. A pure function of the stored record and
/// the time, so that it is tested exactly, occurrence by occurrence.
///
/// It never traps: every sum and difference saturates, and a record it cannot plan for — one read
/// from a damaged row, a deadline outside ``DurableTimers/earliestDate`` ..< ``DurableTimers/latestDate``,
/// a calendar rule with no next occurrence on this system (an unknown time zone) — gets a plan that
/// parks it with the reason, without a fire.
struct OccurrencePlan: Equatable {
    /// Whether the handler runs.
    var fires: Bool
    /// The earliest occurrence the fire stands for.
    var scheduledDeadline: Int64
    /// How many occurrences the fire stands for.
    var deadlineCount: Int
    /// Occurrences skipped before the fire (carried ones included).
    var skippedCount: Int
    /// Where the timer goes once the fire (or its absence) is done.
    var next: DurableTimerOutcome

    /// The most occurrences of a calendar schedule counted one by one at a claim (about 27 years
    /// of a daily rule, under three hours of a per-second one). After an outage with more, the
    /// plan jumps: it finds the occurrences just before now and the first after it, and the
    /// counts of the fire (``DurableFire/deadlineCount``, skipped occurrences) stop at this limit.
    static let countLimit = 10_000

    /// A plan that parks the timer without a fire.
    static func park(_ record: DurableTimerRecord, _ reason: String) -> OccurrencePlan {
        OccurrencePlan(fires: false, scheduledDeadline: record.due, deadlineCount: 0, skippedCount: 0, next: .park(error: reason))
    }

    /// Why the runner cannot plan for `record`, or `nil`: a row this version cannot read, or values
    /// outside the ranges it keeps (written by hand, or by a release that did not check them).
    static func problem(with record: DurableTimerRecord) -> String? {
        if let defect = record.defect { return "the stored timer cannot be read by this version: \(defect)" }
        guard DurableLimits.contains(record.due) else {
            return
                "its deadline (\(record.due) ns since 1970) is outside the dates durable timers keep (\(DurableTimers.earliestDate) ..< \(DurableTimers.latestDate))"
        }
        if case .interval(let interval) = record.recurrence, interval <= 0 || interval > DurableLimits.latest {
            return "its interval (\(interval) ns) is not in 1 ns ... \(DurableLimits.latest) ns"
        }
        switch record.misfire {
        case .all(let max) where max < 1: return "its misfire policy all(max: \(max)) needs a limit of at least 1"
        case .within(let window) where window < .zero: return "its misfire policy within(\(window)) needs a window of zero or more"
        default: break
        }
        guard record.skipped >= 0 else { return "its count of skipped occurrences (\(record.skipped)) is negative" }
        return nil
    }

    /// The plan for `record`, claimed at `now`, with `grace` as the lateness that still counts as on
    /// time.
    static func make(_ record: DurableTimerRecord, now: Int64, grace: Int64) -> OccurrencePlan {
        if let problem = problem(with: record) { return park(record, problem) }
        let carried = record.skipped
        // The occurrences that have come: [due … latest], n of them, and the first one after now.
        var occurrences: [Int64] = []  // only for rules; intervals use arithmetic
        let n: Int
        let latest: Int64
        let following: Int64?
        switch record.recurrence {
        case .none:
            n = 1
            latest = record.due
            following = nil
        case .interval(let interval):
            let elapsed = max(0, record.due.duration(to: now))
            let steps = elapsed / interval
            n = Int(clamping: steps).addingSaturating(1)
            latest = record.due.addingSaturating(steps.multipliedSaturating(by: interval))
            following = latest.addingSaturating(interval)
        case .rule, .schedule:
            let schedule = record.recurrence.calendarSchedule!
            var current = record.due
            occurrences.append(current)
            var next = Self.nextOccurrence(of: schedule, after: current)
            while let candidate = next, candidate <= now, candidate > current, occurrences.count < countLimit {
                current = candidate
                occurrences.append(current)
                next = Self.nextOccurrence(of: schedule, after: current)
            }
            if let candidate = next, candidate <= now, candidate > current {
                // More occurrences came than are counted: jump to the last ones before now that
                // the policy reads, and to the first after now. The ones between are not counted.
                let wanted: Int
                var lower = current
                switch record.misfire {
                case .once: wanted = 0
                case .skip: wanted = 1
                case .all(let max): wanted = min(max, countLimit)
                case .within(let window):
                    wanted = countLimit
                    lower = Swift.max(current, now.addingSaturating(-window.saturatingNanoseconds.clampedNonNegative).addingSaturating(-1))
                }
                let last = Self.lastOccurrences(of: schedule, after: lower, upTo: now, count: wanted)
                occurrences += last
                current = occurrences.last ?? current
                next = Self.nextOccurrence(of: schedule, after: Swift.max(now, current))
            }
            guard let after = next, after > current else {
                if schedule.timeZone != nil, schedule.end != nil {
                    n = occurrences.count
                    latest = current
                    following = nil
                    break
                }
                return park(
                    record,
                    "its calendar schedule (\(schedule)) has no next occurrence on this system: the time zone '\(schedule.timeZoneIdentifier)' is unknown here, or its rules end; retry(key:) it on a system that knows the zone"
                )
            }
            n = occurrences.count
            latest = current
            following = after
        }
        if let following, following >= DurableLimits.latest {
            return park(record, "its next occurrence would fall on or after \(DurableTimers.latestDate), past the dates durable timers keep")
        }
        /// The k-th occurrence (0-based) since `due`.
        func occurrence(_ k: Int) -> Int64 {
            switch record.recurrence {
            case .interval(let interval): record.due.addingSaturating(Int64(k).multipliedSaturating(by: interval))
            default: occurrences.isEmpty ? record.due : occurrences[k]
            }
        }
        /// The occurrence after the k-th (the timer's next due), or `nil` (a one-shot ends).
        func after(_ k: Int) -> Int64? { k < n - 1 ? occurrence(k + 1) : following }
        func then(_ due: Int64?, skipped: Int, fired: Bool) -> DurableTimerOutcome {
            guard let due else { return .delete }
            return .advance(due: due, skipped: skipped, fired: fired)
        }

        switch record.misfire {
        case .once:
            return OccurrencePlan(
                fires: true, scheduledDeadline: record.due, deadlineCount: n, skippedCount: carried, next: then(following, skipped: 0, fired: true))
        case .skip:
            if latest.duration(to: now) <= grace {
                return OccurrencePlan(
                    fires: true, scheduledDeadline: latest, deadlineCount: 1, skippedCount: carried.addingSaturating(n - 1),
                    next: then(following, skipped: 0, fired: true))
            }
            return OccurrencePlan(
                fires: false, scheduledDeadline: latest, deadlineCount: 0, skippedCount: 0,
                next: then(following, skipped: carried.addingSaturating(n), fired: false))
        case .within(let window):
            let oldest = now.addingSaturating(-window.saturatingNanoseconds.clampedNonNegative)
            // The first occurrence inside the window.
            var first = 0
            switch record.recurrence {
            case .interval(let interval):
                if oldest > record.due {
                    let distance = record.due.duration(to: oldest)
                    first = Int(clamping: distance / interval + (distance % interval == 0 ? 0 : 1))
                }
            default:
                while first < n && occurrence(first) < oldest { first += 1 }
            }
            guard first < n else {
                return OccurrencePlan(
                    fires: false, scheduledDeadline: latest, deadlineCount: 0, skippedCount: 0,
                    next: then(following, skipped: carried.addingSaturating(n), fired: false))
            }
            return OccurrencePlan(
                fires: true, scheduledDeadline: occurrence(first), deadlineCount: n - first, skippedCount: carried.addingSaturating(first),
                next: then(following, skipped: 0, fired: true))
        case .all(let max):
            let skip = Swift.max(0, n - max)
            return OccurrencePlan(
                fires: true, scheduledDeadline: occurrence(skip), deadlineCount: 1, skippedCount: carried.addingSaturating(skip),
                next: then(after(skip), skipped: 0, fired: true))
        }
    }

    /// A manual fire (``DurableTimers/fire(key:)``): stands for no occurrence; a one-shot ends, a
    /// repeating timer keeps its next occurrence.
    static func manual(_ record: DurableTimerRecord, now: Int64) -> OccurrencePlan {
        if let problem = problem(with: record) { return park(record, problem) }
        let next: DurableTimerOutcome =
            switch record.recurrence {
            case .none: .delete
            default: .advance(due: record.due, skipped: record.skipped, fired: true)
            }
        return OccurrencePlan(fires: true, scheduledDeadline: now, deadlineCount: 0, skippedCount: 0, next: next)
    }

    /// The last `count` occurrences of `schedule` after `lower` and at or before `now`, oldest
    /// first: found in a span before `now` that doubles until it holds `count` of them (or reaches
    /// `lower`), so a long outage costs the occurrences near its end, not all of them.
    static func lastOccurrences(of schedule: CalendarSchedule, after lower: Int64, upTo now: Int64, count: Int) -> [Int64] {
        guard count > 0, lower < now else { return [] }
        var span: Int64 = 1_000_000_000
        while true {
            let start = Swift.max(lower, now.addingSaturating(-span))
            var found: [Int64] = []
            var cursor = start
            while let candidate = nextOccurrence(of: schedule, after: cursor), candidate <= now, candidate > cursor {
                found.append(candidate)
                cursor = candidate
                // Only the last `count` are kept: a dense span costs time, never memory.
                if found.count >= 2 * count { found.removeFirst(found.count - count) }
            }
            if found.count >= count || start == lower { return Array(found.suffix(count)) }
            span = span.multipliedSaturating(by: 2)
        }
    }

    /// The schedule's first occurrence after `nanoseconds` since 1970, in nanoseconds; `nil` if none.
    static func nextOccurrence(of schedule: CalendarSchedule, after nanoseconds: Int64) -> Int64? {
        guard let date = schedule.nextOccurrence(after: Date(nanosecondsSince1970: nanoseconds)) else { return nil }
        return date.nanosecondsSince1970
    }
}

extension Int64 {
    /// `self`, or 0 if it is negative.
    fileprivate var clampedNonNegative: Int64 { Swift.max(self, 0) }
}

extension Date {
    /// The instant `nanoseconds` after 1970-01-01 00:00 UTC.
    package init(nanosecondsSince1970 nanoseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(nanoseconds / 1_000_000_000) + TimeInterval(nanoseconds % 1_000_000_000) / 1e9)
    }

    /// Nanoseconds since 1970-01-01 00:00 UTC, rounded up to the next whole nanosecond (so that a
    /// deadline read from a `Date` is never earlier than the `Date`), saturating (NaN reads as the
    /// largest value: check `isFinite` first where that matters).
    package var nanosecondsSince1970: Int64 {
        let seconds = timeIntervalSince1970.rounded(.down)
        guard seconds > -9.2e9, seconds < 9.2e9 else { return seconds < 0 ? .min : .max }
        let fraction = ((timeIntervalSince1970 - seconds) * 1e9).rounded(.up)
        return Int64(seconds) * 1_000_000_000 + Int64(fraction)
    }
}
