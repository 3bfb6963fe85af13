import Foundation

/// Thrown by ``withTimeout(_:tolerance:clock:operation:)`` and
/// ``withDeadline(_:tolerance:clock:operation:)`` when the operation did not finish in time. It
/// says how long the call waited, on the clock it waited on.
public struct TimeoutError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The time limit of ``withTimeout(_:tolerance:clock:operation:)``; `nil` for a deadline.
    public let limit: Duration?
    /// The instant at which the operation was cancelled for being late.
    public let deadline: TimerInstant
    /// How long the call waited, from its start to the timeout, on the deadline's clock.
    public let waited: Duration

    public init(limit: Duration?, deadline: TimerInstant, waited: Duration) {
        self.limit = limit
        self.deadline = deadline
        self.waited = waited
    }

    /// `timed out: the operation did not finish within 5s (waited 5s)`, in English whatever the
    /// locale (it is a message for logs).
    public var description: String {
        let style = Duration.UnitsFormatStyle(allowedUnits: [.hours, .minutes, .seconds, .milliseconds], width: .narrow)
            .locale(Locale(identifier: "en_US_POSIX"))
        let waitedText = waited.formatted(style)
        if let limit {
            return "timed out: the operation did not finish within \(limit.formatted(style)) (waited \(waitedText))"
        }
        return "timed out: the operation did not finish by \(deadline) (waited \(waitedText))"
    }
}
