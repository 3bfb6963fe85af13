import NIOCore
import NIOPosix
import Synchronization

/// SwiftNIO's `SelectableEventLoop` (a one-thread `MultiThreadedEventLoopGroup`), on
/// `NIODeadline` (CLOCK_MONOTONIC). Timers are scheduled from whatever thread the scenario runs
/// on (NIO takes a lock for that); churn runs on the event loop itself, where NIO code schedules
/// its timeouts. A repeating timer reschedules itself on its own grid from its handler. The
/// blockable context is a second one-thread group.
class NIOPeerBase: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop: any EventLoop
    private let blockedGroup = LazyBox<MultiThreadedEventLoopGroup> { MultiThreadedEventLoopGroup(numberOfThreads: 1) }

    init() { loop = group.next() }

    @inline(__always) func now() -> Int64 { KernelClock.monotonic() }

    func eventLoop(_ delivery: Delivery) -> any EventLoop {
        switch delivery {
        case .standard: loop
        case .blockable: blockedGroup.value.next()
        }
    }

    @inline(__always) static func deadline(_ nanoseconds: Int64) -> NIODeadline {
        .uptimeNanoseconds(UInt64(nanoseconds))
    }

    func onSchedulingThread(_ body: @escaping @Sendable () -> Void) {
        try! loop.submit(body).wait()
    }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        eventLoop(delivery).scheduleTask(deadline: Self.deadline(deadline), work)
    }
}

/// `EventLoop.scheduleTask(deadline:_:)`: a `Scheduled<T>` with a promise per timer.
final class NIOScheduleTaskPeer: NIOPeerBase, Peer, @unchecked Sendable {
    typealias OneShot = Scheduled<Void>

    static let name = "nio-scheduletask"
    static let capabilities: Capabilities = [.oneShot, .anyThread, .repeating, .blockable, .manyRepeating]
    static let limitations = "nio-*: the 10 % wake-up variant n/a (NIO has no tolerance)"

    required override init() { super.init() }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> Scheduled<Void> {
        loop.scheduleTask(deadline: Self.deadline(deadline)) { log.fired(id, at: KernelClock.monotonic()) }
    }

    func cancel(_ timer: Scheduled<Void>) { timer.cancel() }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let loop = eventLoop(delivery)
        let stopped = StopFlag()
        @Sendable func arm(_ deadline: Int64) {
            loop.scheduleTask(deadline: Self.deadline(deadline)) {
                handler(Tick(now: KernelClock.monotonic(), scheduled: deadline))
                if !stopped.isSet { arm(deadline + interval) }
            }
        }
        arm(first)
        return Repeater { stopped.set() }
    }
}

/// `EventLoop.scheduleCallback(at:handler:)` (NIO 2.75+): a handler value and an ID, no promise.
final class NIOScheduleCallbackPeer: NIOPeerBase, Peer, @unchecked Sendable {
    typealias OneShot = NIOScheduledCallback

    static let name = "nio-schedulecallback"
    static let capabilities: Capabilities = [.oneShot, .anyThread, .repeating, .blockable, .manyRepeating]

    required override init() { super.init() }

    struct OneShotHandler: NIOScheduledCallbackHandler, Sendable {
        let log: FireLog
        let id: Int
        func handleScheduledCallback(eventLoop: some EventLoop) { log.fired(id, at: KernelClock.monotonic()) }
    }

    struct RepeatingHandler: NIOScheduledCallbackHandler, Sendable {
        let deadline: Int64
        let interval: Int64
        let stopped: StopFlag
        let handler: @Sendable (Tick) -> Void

        func handleScheduledCallback(eventLoop: some EventLoop) {
            handler(Tick(now: KernelClock.monotonic(), scheduled: deadline))
            guard !stopped.isSet else { return }
            let next = RepeatingHandler(deadline: deadline + interval, interval: interval, stopped: stopped, handler: handler)
            _ = try? eventLoop.scheduleCallback(at: NIOPeerBase.deadline(next.deadline), handler: next)
        }
    }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> NIOScheduledCallback {
        try loop.scheduleCallback(at: Self.deadline(deadline), handler: OneShotHandler(log: log, id: id))
    }

    func cancel(_ timer: NIOScheduledCallback) { timer.cancel() }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let stopped = StopFlag()
        let first = RepeatingHandler(deadline: first, interval: interval, stopped: stopped, handler: handler)
        try eventLoop(delivery).scheduleCallback(at: Self.deadline(first.deadline), handler: first)
        return Repeater { stopped.set() }
    }
}

final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}
