import Dispatch
import TimerKit

/// TimerKit's high-precision mode (`TimerPrecision.high`): the engine sleeps until shortly before
/// each deadline and waits actively for the rest. Repeating timers and frame clocks only, on the
/// shared continuous clock, delivered on the engine thread — beside `timerkit` (the same timers in
/// the standard mode) and `os-floor` in the precision and frames scenarios.
final class TimerKitPrecisePeer: Peer {
    typealias OneShot = Never

    static let name = "timerkit-precise"
    static let capabilities: Capabilities = [.repeating]
    static let isVariant = true
    static let limitations = "timerkit-precise: repeating timers and frame clocks only (the high-precision mode is for the few timers that need it)"

    let clock = TimerClock.continuous

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        try TimerKitPeer.repeating(first: first, interval: interval, tolerance: 0, precision: .high, clock: clock, delivery: .engineThread, handler)
    }

    func frames(framesPerSecond: Int, _ handler: @escaping @Sendable (Tick) -> Void) throws -> Repeater {
        try TimerKitPeer.frames(framesPerSecond: framesPerSecond, precision: .high, clock: clock, handler)
    }
}
