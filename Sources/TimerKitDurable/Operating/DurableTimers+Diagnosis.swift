import Foundation
import TimerKit

// Why a timer has not fired, and what it will do.

extension DurableTimers {
    /// Explains, on the store's time, why the timer under `key` has not fired: not due yet (in how
    /// long), retrying, paused (by what), parked (why), claimed by which instance until when (and
    /// whether that instance is alive), due with no live instance running its handler (an orphan),
    /// no instance alive at all, a clock offset — and its last recorded run.
    public func why(key: String) async throws(DurableTimerError) -> DurableTimerDiagnosis {
        let now = now()
        let record = DurableLimits.isValid(key: key) ? try await store.record(namespace: namespace, key: key) : nil
        let lastRun = DurableLimits.isValid(key: key) ? try await store.history(namespace: namespace, key: key, limit: 1).first : nil
        var reasons: [DurableTimerDiagnosis.Reason] = []
        let live = try await store.instances(namespace: namespace).filter { $0.isAlive(at: now) }
        if let record {
            let pauses = try await store.pauses(namespace: namespace)
            if record.isPaused {
                if pauses.contains(where: { $0.handler == nil }) {
                    reasons.append(.paused(.namespace))
                } else if pauses.contains(where: { $0.handler == record.handler }) {
                    reasons.append(.paused(.handler(record.handler)))
                } else {
                    reasons.append(.paused(.key))
                }
            } else if record.isParked {
                reasons.append(.parked(error: record.lastError ?? "no reason recorded"))
            } else if let owner = record.owner, let lease = record.leaseUntil, lease > now {
                let instance = owner.lastIndex(of: "/").map { String(owner[..<$0]) } ?? owner
                reasons.append(.running(instance: instance, until: Date(nanosecondsSince1970: lease), instanceAlive: live.contains { $0.id == instance }))
            } else if record.readyAt > now {
                let at = Date(nanosecondsSince1970: record.readyAt)
                if record.attempts > 0, record.lastError != nil {
                    reasons.append(.retrying(attempt: record.attempts, at: at, error: record.lastError))
                } else {
                    reasons.append(.notDueYet(at: at, in: .nanoseconds(now.duration(to: record.readyAt))))
                }
            } else {
                let runners = live.filter { $0.handlers.contains(record.handler) }.map(\.id)
                if live.isEmpty {
                    reasons.append(.noInstance)
                } else if runners.isEmpty {
                    reasons.append(.orphan(handler: record.handler))
                } else {
                    reasons.append(.due(for: .nanoseconds(record.readyAt.duration(to: now)), instances: runners))
                }
            }
            // Not due yet, but nothing would run it when it is.
            if !record.isPaused, !record.isParked, record.readyAt > now {
                if live.isEmpty {
                    reasons.append(.noInstance)
                } else if !live.contains(where: { $0.handlers.contains(record.handler) }) {
                    reasons.append(.orphan(handler: record.handler))
                }
            }
        } else {
            reasons.append(.notFound)
        }
        if abs(store.clockOffset) > 1_000_000_000 { reasons.append(.clockOffset(.nanoseconds(store.clockOffset))) }
        var info = record.map(self.info)
        info?.lastRun = lastRun
        return DurableTimerDiagnosis(key: key, timer: info, lastRun: lastRun, reasons: reasons, checkedAt: Date(nanosecondsSince1970: now))
    }

    /// The next `count` occurrences of the timer under `key` (1 to 1,000; in its schedule's zone,
    /// across clock changes), and, given an `outage`, what its misfire policy does when the
    /// runners come back that long after its next occurrence.
    ///
    /// - Throws: ``DurableTimerError/notFound(_:)`` when no timer is stored under the key.
    public func plan(key: String, count: Int = 10, outage: Duration? = nil) async throws(DurableTimerError) -> DurableTimerPlan {
        guard DurableLimits.isValid(key: key), let record = try await store.record(namespace: namespace, key: key) else { throw .notFound(key) }
        let count = min(max(count, 1), 1_000)
        var occurrences = [record.due]
        switch record.recurrence {
        case .none:
            break
        case .interval(let interval):
            while occurrences.count < count, interval > 0, let last = occurrences.last, last.addingSaturating(interval) < DurableLimits.latest {
                occurrences.append(last.addingSaturating(interval))
            }
        case .rule, .schedule:
            let schedule = record.recurrence.calendarSchedule!
            while occurrences.count < count, let last = occurrences.last, let next = OccurrencePlan.nextOccurrence(of: schedule, after: last), next > last {
                occurrences.append(next)
            }
        }
        let afterOutage = outage.map { outage -> DurableTimerPlan.AfterOutage in
            let plan = OccurrencePlan.make(
                record, now: record.due.addingSaturating(max(outage, .zero).saturatingNanoseconds), grace: options.grace.saturatingNanoseconds)
            var next: Date?
            var parked: String?
            switch plan.next {
            case .advance(let due, _, _): next = Date(nanosecondsSince1970: due)
            case .park(let reason): parked = reason
            case .delete, .retry: break
            }
            return DurableTimerPlan.AfterOutage(
                outage: outage, fires: plan.fires, standsFor: plan.fires ? plan.deadlineCount : 0, skipped: plan.skippedCount, next: next, parkedBecause: parked
            )
        }
        let zone = record.recurrence.calendarSchedule.flatMap { TimeZone(identifier: $0.timeZoneIdentifier) }
        return DurableTimerPlan(
            key: key, misfire: record.misfire, occurrences: occurrences.map { Date(nanosecondsSince1970: $0) }, timeZone: zone, afterOutage: afterOutage)
    }
}
