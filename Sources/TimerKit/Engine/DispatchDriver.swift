import Dispatch
import Foundation

/// The portable engine driver: one `DispatchSourceTimer` per engine, re-armed to the earliest
/// deadline with zero leeway. The default on Apple platforms; on Linux it serves tests, which keep
/// it from rotting.
///
/// The suspending clock maps to `DispatchTime` and the wall clock to `DispatchWallTime`. Dispatch
/// has no continuous time in Swift, so a continuous deadline is armed as a delay from now on the
/// suspending timeline; after the machine sleeps, the engine re-reads the continuous clock when it
/// wakes and fires what is due.
final class DispatchDriver: EngineDriver, @unchecked Sendable {
    private let kind: TimerClock.Kind
    private let queue: DispatchQueue
    private let source: DispatchSourceTimer

    init(kind: TimerClock.Kind) {
        precondition(kind != .virtual, "DispatchDriver: a virtual clock has no driver")
        self.kind = kind
        self.queue = DispatchQueue(label: "TimerKit engine (\(kind))", qos: .userInteractive)
        self.source = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
    }

    func start(serving engine: TimerEngine) {
        let source = self.source
        source.setEventHandler {
            if !engine.serviceDueTimers() {
                source.cancel()
            }
        }
        source.activate()
    }

    func arm(at deadline: Int64) {
        guard deadline != .max else {
            source.schedule(deadline: .distantFuture, leeway: .nanoseconds(0))
            return
        }
        switch kind {
        case .suspending:
            source.schedule(deadline: DispatchTime(uptimeNanoseconds: UInt64(max(deadline, 1))), leeway: .nanoseconds(0))
        case .wall:
            let clamped = max(deadline, 1)
            let spec = timespec(tv_sec: Int(clamped / 1_000_000_000), tv_nsec: Int(clamped % 1_000_000_000))
            source.schedule(wallDeadline: DispatchWallTime(timespec: spec), leeway: .nanoseconds(0))
        case .continuous, .virtual:
            let delay = max(0, deadline &- SystemClock.now(.continuous))
            source.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .nanoseconds(0))
        }
    }
}
