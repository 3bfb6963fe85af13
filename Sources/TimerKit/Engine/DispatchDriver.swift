import Dispatch
import Foundation

/// The portable engine driver: one `DispatchSourceTimer` per engine, re-armed to the earliest
/// deadline with zero leeway.
///
/// Where it serves (``EngineDriverKind``): the wall clock on Apple platforms, whose Dispatch wall
/// timers follow changes to the system clock; every clock when the package is built with
/// `-DTIMERKIT_DISPATCH_DRIVER`, which CI does on Linux to run the whole suite on it.
///
/// The suspending clock maps to `DispatchTime` and the wall clock to `DispatchWallTime`. Dispatch
/// has no continuous time in Swift, so a continuous deadline is armed as a delay from now on the
/// suspending timeline; after the machine sleeps, the engine re-reads the continuous clock when it
/// wakes and fires what is due — late by the sleep, which is why no platform's default continuous
/// clock uses this driver.
///
/// Every conversion saturates in 64 bits: on watchOS (`arm64_32`) `Int` is 32-bit, so no deadline
/// or delay passes through `Int` nanoseconds.
final class DispatchDriver: EngineDriver, @unchecked Sendable {
    private let kind: TimerClock.Kind
    private let queue: DispatchQueue
    private let source: DispatchSourceTimer

    init(kind: TimerClock.Kind) {
        precondition(kind != .virtual, "DispatchDriver: a virtual clock has no driver")
        self.kind = kind
        self.queue = DispatchQueue(label: "TimerKit engine (\(kind))", qos: .userInteractive)
        self.source = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
        queue.setSpecific(key: Self.driverKey, value: ObjectIdentifier(self))
    }

    /// Marks each driver's queue with the driver, for ``isCurrent``.
    private static let driverKey = DispatchSpecificKey<ObjectIdentifier>()

    var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.driverKey) == ObjectIdentifier(self) }

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
        source.schedule(deadline: Self.dispatchDeadline(for: deadline, kind: kind, now: SystemClock.now(kind)), leeway: .nanoseconds(0))
    }

    /// When a deadline (nanoseconds on a clock of `kind`, whose reading is `now`) is due, as Dispatch
    /// takes it; `wallDeadline` is set for the wall clock.
    ///
    /// A deadline that has come — the engine's "wake at once", armed at 1 ns, for a yield or a
    /// shutdown — is armed as `DispatchTime.now()` on every clock: `dispatch_walltime` reads an
    /// instant at or before 1 ns after the epoch as `DISPATCH_TIME_FOREVER`, which stalled every
    /// wall timer of the process and leaked a dedicated wall clock at shutdown.
    static func dispatchDeadline(for deadline: Int64, kind: TimerClock.Kind, now: Int64) -> Deadline {
        if deadline == .max { return .time(.distantFuture) }
        if deadline <= now { return .time(.now()) }
        switch kind {
        case .wall:
            // `time_t` and `Int` are 32-bit on watchOS: seconds past 2038 clamp there.
            let spec = timespec(tv_sec: Int(clamping: deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            return .wall(DispatchWallTime(timespec: spec))
        case .suspending:
            return .time(DispatchTime(uptimeNanoseconds: UInt64(deadline)))
        case .continuous, .virtual:
            let delay = deadline &- now  // > 0 here
            let uptime = DispatchTime.now().uptimeNanoseconds
            let (sum, overflow) = uptime.addingReportingOverflow(UInt64(delay))
            return .time(overflow || sum >= UInt64(Int64.max) ? .distantFuture : DispatchTime(uptimeNanoseconds: sum))
        }
    }

    /// A deadline on one of Dispatch's two timelines.
    enum Deadline: Equatable {
        case time(DispatchTime)
        case wall(DispatchWallTime)
    }
}

extension DispatchSourceTimer {
    fileprivate func schedule(deadline: DispatchDriver.Deadline, leeway: DispatchTimeInterval) {
        switch deadline {
        case .time(let time): schedule(deadline: time, leeway: leeway)
        case .wall(let time): schedule(wallDeadline: time, leeway: leeway)
        }
    }
}
