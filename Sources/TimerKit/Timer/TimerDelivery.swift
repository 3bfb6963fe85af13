import Dispatch
import Foundation

/// Where a timer's handler runs (C15).
///
/// No run loop is involved: a timer fires whatever the main thread is doing with its run loop, in
/// every run-loop mode, and a blocked thread delays only the timers delivered to it.
///
/// A `@MainActor` handler (``TimerHandler/onMainActor(_:)``) is delivered on the main queue and
/// needs no delivery of its own.
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
        TimerDelivery(target: .queue(isMain(queue) ? mainQueue : queue))
    }

    /// The main queue, one object for every delivery to it. On Linux each read of
    /// `DispatchQueue.main` makes a new object for the same queue, so it is recognized by its label.
    private static let mainQueue = DispatchQueue.main

    /// Whether `queue` is the main queue, whichever object stands for it.
    static func isMain(_ queue: DispatchQueue) -> Bool {
        queue === mainQueue || queue.label == mainQueue.label
    }

    /// Whether the caller runs on the main queue: on the main thread, or in a block of the main
    /// queue. (On Linux, once `dispatchMain()` has been called the main thread is gone and the main
    /// queue's blocks — the main actor's jobs among them — run on other threads.)
    static var isOnMainQueue: Bool {
        Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueKey) != nil
    }

    /// A mark on the main queue, for ``isOnMainQueue``.
    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        mainQueue.setSpecific(key: key, value: true)
        return key
    }()

    public var description: String {
        switch target {
        case .engineThread: "engineThread"
        case .queue(let queue): "queue(\(queue.label))"
        }
    }
}
