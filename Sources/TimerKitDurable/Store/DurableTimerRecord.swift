import Foundation
import TimerKit

/// One stored durable timer: what it runs, when, how it repeats, and who holds it.
package struct DurableTimerRecord: Sendable, Hashable {
    /// How a timer repeats.
    package enum Recurrence: Sendable, Hashable {
        case none
        /// Every `nanoseconds`, on the grid of its first occurrence.
        case interval(Int64)
        /// A ``CalendarRule``, as written before cron expressions (stored as JSON).
        case rule(CalendarRule)
        /// A ``CalendarSchedule`` (stored as its text).
        case schedule(CalendarSchedule)

        /// The calendar schedule of a rule or a schedule; `nil` for the others.
        package var calendarSchedule: CalendarSchedule? {
            switch self {
            case .rule(let rule): CalendarSchedule(rule)
            case .schedule(let schedule): schedule
            default: nil
            }
        }
    }

    package var namespace: String
    package var key: String
    package var handler: String
    /// The payload, as JSON.
    package var payload: Data
    package var recurrence: Recurrence
    package var misfire: MisfirePolicy
    /// The occurrence the next fire is for (the grid), in nanoseconds since 1970.
    package var due: Int64
    /// When it may next be claimed: `due`, a retry's time, or its lease's expiry.
    package var readyAt: Int64
    /// The occurrence's sequence number, assigned by the store.
    package var sequence: Int64 = 0
    package var fireCount: Int64 = 0
    package var attempts: Int = 0
    /// Occurrences skipped since the last fire, carried into the next.
    package var skipped: Int = 0
    package var lastError: String?
    /// Held out of claims: parked as failed, or paused (see ``isPaused``).
    package var isParked = false
    /// Paused by an operator (the store marks it parked too): ``isParked`` alone means failed.
    package var isPaused = false
    package var owner: String?
    package var leaseUntil: Int64?
    /// Why the stored row could not be read as it was written (an unknown misfire policy or rule
    /// form, a value of the wrong type), or `nil`. A record with a defect carries placeholder
    /// values where the defect is; the runner parks it with this reason instead of running it.
    package var defect: String?
    /// The trace context its schedule stored (``DurableTimerInstrumentation``); empty for none.
    package var traceContext: [String: String] = [:]

    package init(namespace: String, key: String, handler: String, payload: Data, recurrence: Recurrence, misfire: MisfirePolicy, due: Int64) {
        self.namespace = namespace
        self.key = key
        self.handler = handler
        self.payload = payload
        self.recurrence = recurrence
        self.misfire = misfire
        self.due = due
        self.readyAt = due
    }
}
