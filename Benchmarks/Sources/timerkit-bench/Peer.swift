import Foundation

/// What a peer can do; the runner marks every other (scenario, peer) pair "n/a" without running it.
struct Capabilities: OptionSet, Sendable {
    let rawValue: Int
    /// Schedules and cancels one-shot timers at absolute deadlines (churn, scale).
    static let oneShot = Capabilities(rawValue: 1 << 0)
    /// Runs repeating timers (precision, busy, wakeups).
    static let repeating = Capabilities(rawValue: 1 << 1)
    /// Honours a tolerance / leeway (the 10 % wake-up variant).
    static let tolerance = Capabilities(rawValue: 1 << 2)
    /// Has a serial context other than its standard delivery that work and timers can be sent to,
    /// and so blocked (busy-same; the blockers of busy-other).
    static let blockable = Capabilities(rawValue: 1 << 3)
    /// Can run 10k repeating timers at once (wakeups).
    static let manyRepeating = Capabilities(rawValue: 1 << 4)
    /// Schedules and cancels one-shots from any thread at once (mtchurn).
    static let anyThread = Capabilities(rawValue: 1 << 5)
    /// Gives a one-shot a tolerance (scale's variant with a tolerance).
    static let oneShotTolerance = Capabilities(rawValue: 1 << 6)
}

/// Where a peer runs a handler.
enum Delivery: Sendable {
    /// The peer's natural, lowest-latency delivery (TimerKit's engine thread, the dispatch
    /// timer's queue, the run-loop thread, the task itself, the event loop, the sleeping thread).
    case standard
    /// The peer's blockable serial context: a second queue, run loop, event loop or actor.
    case blockable
}

/// A way of running timers that the benchmark compares with TimerKit.
///
/// A peer works on one clock of its own: `now()` and every deadline it is given are nanoseconds
/// on that clock, and handlers read that clock first thing. Scenarios are generic over the peer
/// (so nothing is boxed on the hot paths), and each runs in a process of its own.
protocol Peer: AnyObject, Sendable {
    /// The handle of a pending one-shot timer.
    associatedtype OneShot

    /// The name on the command line and in the tables.
    static var name: String { get }
    static var capabilities: Capabilities { get }
    /// Why the peer sits out the scenarios it cannot do (shown under the tables).
    static var limitations: String { get }
    /// Whether the peer is a variant of TimerKit raced against it (left out of quick runs unless
    /// named with `--peer`).
    static var isVariant: Bool { get }
    /// How the peer moves a pending one-shot's deadline (the reset scenario's table).
    static var resetMethod: String { get }

    init() throws

    /// The current instant on the peer's clock, in nanoseconds.
    func now() -> Int64

    /// Schedules a one-shot timer at `deadline` that calls `log.fired(id, at: now())`.
    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> OneShot

    /// Schedules a one-shot timer at `deadline` that may fire up to `tolerance` nanoseconds later,
    /// so that the peer can serve several with one wake-up (peers with ``Capabilities/oneShotTolerance``).
    func schedule(at deadline: Int64, tolerance: Int64, id: Int, log: FireLog) throws -> OneShot

    /// Cancels a one-shot timer that has not fired.
    func cancel(_ timer: OneShot)

    /// Moves a pending one-shot to `deadline` and returns the handle to keep (reset): in place
    /// where the peer can, else by cancelling it and scheduling anew (the default).
    func reset(_ timer: OneShot, to deadline: Int64, id: Int, log: FireLog) throws -> OneShot

    /// Runs `work` once at `deadline` on `delivery` (the busy scenario's blockers).
    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws

    /// Starts a repeating timer whose deadlines are `first + k·interval`.
    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater

    /// Ticks at a frame rate (the frames scenario): the peer's frame clock where it has one, else
    /// a repeating timer on the frame grid (the default).
    func frames(framesPerSecond: Int, _ handler: @escaping @Sendable (Tick) -> Void) throws -> Repeater

    /// Runs `body` on the thread where this peer's timers are meant to be scheduled and cancelled
    /// from (the caller's for most; the run loop's or event loop's own thread for some), and waits.
    func onSchedulingThread(_ body: @escaping @Sendable () -> Void)

    /// The peer's own count of timer wake-ups, if it keeps one.
    func wakeUpCount() -> Int?
}

extension Peer {
    static var limitations: String { "" }

    static var isVariant: Bool { false }

    static var resetMethod: String { "cancel + schedule" }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> OneShot {
        throw BenchError.unsupported("\(Self.name) has no one-shot timers")
    }

    func schedule(at deadline: Int64, tolerance: Int64, id: Int, log: FireLog) throws -> OneShot {
        guard tolerance == 0 else { throw BenchError.unsupported("\(Self.name) has no tolerance for one-shots") }
        return try schedule(at: deadline, id: id, log: log)
    }

    func cancel(_ timer: OneShot) {}

    func reset(_ timer: OneShot, to deadline: Int64, id: Int, log: FireLog) throws -> OneShot {
        cancel(timer)
        return try schedule(at: deadline, id: id, log: log)
    }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        throw BenchError.unsupported("\(Self.name) has no blockable context")
    }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        throw BenchError.unsupported("\(Self.name) has no repeating timers")
    }

    func frames(framesPerSecond: Int, _ handler: @escaping @Sendable (Tick) -> Void) throws -> Repeater {
        let interval = (NS.second + Int64(framesPerSecond / 2)) / Int64(framesPerSecond)
        return try repeating(first: now() + interval, interval: interval, tolerance: 0, delivery: .standard, handler)
    }

    func onSchedulingThread(_ body: @escaping @Sendable () -> Void) { body() }

    func wakeUpCount() -> Int? { nil }
}

/// Stops a repeating timer.
final class Repeater: Sendable {
    private let stopAction: @Sendable () -> Void
    init(stop: @escaping @Sendable () -> Void) { stopAction = stop }
    func stop() { stopAction() }
}

enum BenchError: Error, CustomStringConvertible {
    case unsupported(String)
    case usage(String)
    case failed(String)

    var description: String {
        switch self {
        case .unsupported(let text), .usage(let text), .failed(let text): text
        }
    }
}

/// Every peer, in table order. TimerKit comes first: the ratio columns divide by its figures.
let allPeers: [any Peer.Type] = [
    TimerKitPeer.self,
    TimerKitHeapPeer.self,
    TimerKitTimerPeer.self,
    TimerKitRegistryPeer.self,
    TimerKitPrecisePeer.self,
    DispatchSerialPeer.self,
    DispatchGlobalPeer.self,
    FoundationRunLoopPeer.self,
    TaskSleepPeer.self,
    TaskSleepTimerKitPeer.self,
    AsyncTimerSequencePeer.self,
    NIOScheduleTaskPeer.self,
    NIOScheduleCallbackPeer.self,
    OSFloorPeer.self
]

func peerType(named name: String) -> (any Peer.Type)? {
    allPeers.first { $0.name == name }
}
