import Dispatch

/// Where a timer's handler runs (C15).
///
/// No run loop is involved: a timer fires whatever the main thread is doing with its run loop, in
/// every run-loop mode, and a blocked thread delays only the timers delivered to it.
///
/// For a `@MainActor` handler, use ``ScheduledTimer/repeatingOnMainActor(every:first:tolerance:clock:missedDeadlines:_:)``
/// and its siblings; they deliver on the main queue.
public struct TimerDelivery: Sendable, Hashable, CustomStringConvertible {
    enum Target: Sendable, Hashable {
        case engineThread
        case queue(DispatchQueue)

        static func == (lhs: Target, rhs: Target) -> Bool {
            switch (lhs, rhs) {
            case (.engineThread, .engineThread): true
            case (.queue(let a), .queue(let b)): a === b
            default: false
            }
        }

        func hash(into hasher: inout Hasher) {
            switch self {
            case .engineThread: hasher.combine(0)
            case .queue(let queue): hasher.combine(ObjectIdentifier(queue))
            }
        }
    }

    let target: Target

    /// Runs the handler on the clock's engine thread, right after the wake-up: the shortest
    /// latency there is.
    ///
    /// The engine thread serves every timer of the clock, so a handler delivered here must be short
    /// and must never block: while it runs, no other timer of the clock fires. Hand longer work to a
    /// queue or a task. ``ScheduledTimer/fire()`` runs such a handler on the calling thread.
    public static let engineThread = TimerDelivery(target: .engineThread)

    /// Runs the handler on a dispatch queue (main, global or your own). Runs of one timer never
    /// overlap, even on a concurrent queue (C14).
    public static func queue(_ queue: DispatchQueue) -> TimerDelivery {
        TimerDelivery(target: .queue(queue))
    }

    public var description: String {
        switch target {
        case .engineThread: "engineThread"
        case .queue(let queue): "queue(\(queue.label))"
        }
    }
}
