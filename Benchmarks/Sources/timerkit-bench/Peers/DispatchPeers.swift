import Dispatch

/// A `DispatchSourceTimer` per timer (leeway = the tolerance, 0 by default), on CLOCK_MONOTONIC
/// (`DispatchTime`'s uptime clock on Linux).
class DispatchTimerPeer: @unchecked Sendable {
    static var resetMethod: String { "`schedule(deadline:)` in place" }

    typealias OneShot = any DispatchSourceTimer

    /// Where timers are delivered by default.
    let queue: DispatchQueue
    /// The blockable context (a serial queue), for peers that can deliver there.
    let blockedQueue = DispatchQueue(label: "bench.dispatch.blocked")

    init(queue: DispatchQueue) { self.queue = queue }

    @inline(__always) func now() -> Int64 { KernelClock.monotonic() }

    func target(_ delivery: Delivery) -> DispatchQueue {
        switch delivery {
        case .standard: queue
        case .blockable: blockedQueue
        }
    }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> any DispatchSourceTimer {
        try schedule(at: deadline, tolerance: 0, id: id, log: log)
    }

    func schedule(at deadline: Int64, tolerance: Int64, id: Int, log: FireLog) throws -> any DispatchSourceTimer {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: UInt64(deadline)), leeway: .nanoseconds(Int(tolerance)))
        source.setEventHandler { log.fired(id, at: KernelClock.monotonic()) }
        source.activate()
        return source
    }

    func cancel(_ timer: any DispatchSourceTimer) { timer.cancel() }

    /// In place: an active source takes a new deadline.
    func reset(_ timer: any DispatchSourceTimer, to deadline: Int64, id: Int, log: FireLog) throws -> any DispatchSourceTimer {
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: UInt64(deadline)), leeway: .nanoseconds(0))
        return timer
    }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        target(delivery).asyncAfter(deadline: DispatchTime(uptimeNanoseconds: UInt64(deadline)), execute: work)
    }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let source = DispatchSource.makeTimerSource(queue: target(delivery))
        source.schedule(
            deadline: DispatchTime(uptimeNanoseconds: UInt64(first)),
            repeating: .nanoseconds(Int(interval)),
            leeway: .nanoseconds(Int(tolerance)))
        let box = SourceBox(source)
        source.setEventHandler {
            let now = KernelClock.monotonic()
            // `data`: how many deadlines passed since the last run (missed ones coalesce).
            handler(Tick(now: now, count: Int(box.source?.data ?? 1)))
        }
        source.activate()
        // The cycle source → handler → box → source ends when the cancelled source lets its
        // handler go.
        return Repeater { box.source?.cancel() }
    }
}

/// Lets a timer's handler read its own source without a retain cycle.
private final class SourceBox: @unchecked Sendable {
    let source: (any DispatchSourceTimer)?
    init(_ source: any DispatchSourceTimer) { self.source = source }
}

/// Dispatch timers delivered on one serial queue.
final class DispatchSerialPeer: DispatchTimerPeer, Peer, @unchecked Sendable {
    static let name = "dispatch-serial"
    static let capabilities: Capabilities = [.oneShot, .oneShotTolerance, .anyThread, .repeating, .tolerance, .blockable, .manyRepeating]
    required init() { super.init(queue: DispatchQueue(label: "bench.dispatch.serial")) }
}

/// Dispatch timers delivered on the default global (concurrent) queue.
final class DispatchGlobalPeer: DispatchTimerPeer, Peer, @unchecked Sendable {
    static let name = "dispatch-global"
    static let capabilities: Capabilities = [.oneShot, .oneShotTolerance, .anyThread, .repeating, .tolerance, .manyRepeating]
    static let limitations = "dispatch-global: busy-same n/a (a concurrent queue cannot be the blocked serial context)"
    required init() { super.init(queue: DispatchQueue.global()) }
}
