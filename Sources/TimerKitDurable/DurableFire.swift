import Foundation

/// What one run of a durable timer's handler stands for: the occurrence, its lateness, and the
/// attempt (at-least-once delivery).
public struct DurableFire: Sendable, Hashable, CustomStringConvertible {
    /// The timer's namespace.
    public let namespace: String
    /// The timer's key within its namespace.
    public let key: String
    /// The occurrence this fire was scheduled for: the earliest one it stands for; for a run
    /// started by ``DurableTimers/fire(key:)``, the moment it was asked for.
    public let scheduledDeadline: Date
    /// When the runner claimed the timer to run this fire, on the durable clock.
    public let firedAt: Date
    /// How many occurrences this fire stands for: 1 normally; more after downtime under
    /// ``MisfirePolicy/once``; 0 for a run started by ``DurableTimers/fire(key:)``.
    ///
    /// A calendar schedule's occurrences are counted one by one up to 10,000 at a claim: after a
    /// longer outage, this count and ``skippedDeadlineCount`` stop there (the fire and the next
    /// occurrence are still exact).
    public let deadlineCount: Int
    /// How many occurrences before ``scheduledDeadline`` passed without a fire of their own, under
    /// ``MisfirePolicy/skip``, ``MisfirePolicy/within(_:)`` or a capped ``MisfirePolicy/all(max:)``.
    public let skippedDeadlineCount: Int
    /// The attempt at this occurrence, from 1: more after the handler threw, or after the process
    /// running it died before it finished (its lease expired).
    public let attempt: Int
    /// The occurrence's sequence number, unique in the store and the same for every attempt at it.
    public let sequence: Int64

    /// `namespace/key#sequence`: the same for every attempt at one occurrence, different for every
    /// occurrence — what a handler with side effects outside the store records to run them once.
    public var idempotencyKey: String { "\(namespace)/\(key)#\(sequence)" }

    /// How long after ``scheduledDeadline`` the fire happened (never negative; saturating).
    public var lateness: Duration {
        .nanoseconds(max(0, scheduledDeadline.nanosecondsSince1970.duration(to: firedAt.nanosecondsSince1970)))
    }

    /// Whether ``DurableTimers/fire(key:)`` started this run rather than an occurrence.
    public var isManual: Bool { deadlineCount == 0 }

    public var description: String {
        "DurableFire(\(idempotencyKey), attempt \(attempt), stands for \(deadlineCount), skipped \(skippedDeadlineCount), late \(lateness))"
    }
}
