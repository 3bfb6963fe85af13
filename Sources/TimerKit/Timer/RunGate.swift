import Synchronization

/// Where the run a delivery decided on stands (C8): the one step of a timer's life that is taken
/// without its shard's lock.
///
/// The engine decides a run under its lock (``decide()``); the delivering thread begins it
/// without the lock, with one atomic step immediately before it calls the handler (``begin()``),
/// and ends it right after the handler returns (``end()``). `invalidate()`, under the lock, stops a
/// decided run that has not begun (``stopDecided()``), so once it returns no new run begins, and
/// nothing between the atomic step and the call to the handler can block, take a lock or wake a
/// thread.
struct RunGate: ~Copyable {
    /// No run decided or under way.
    private static let idle: UInt8 = 0
    /// The engine decided on a run, under its lock; the handler has not been called.
    private static let decided: UInt8 = 1
    /// The run has begun: the handler is being called or running.
    private static let entered: UInt8 = 2
    /// `invalidate()` stopped the decided run before it began.
    private static let stopped: UInt8 = 3

    private let state = Atomic<UInt8>(RunGate.idle)
    /// Whether tasks may wait for the run under way (``ScheduledTimer/invalidateAndWait()``):
    /// read by the running thread without the lock.
    private let mayHaveWaiters = Atomic<Bool>(false)

    init() {}

    /// Marks the run just decided on. Under its shard's lock.
    @inline(__always)
    func decide() {
        state.store(Self.decided, ordering: .sequentiallyConsistent)
    }

    /// Begins the decided run, unless `invalidate()` stopped it first. Called by the delivering
    /// thread, without the lock, immediately before it calls the handler.
    @inline(__always)
    func begin() -> Bool {
        state.compareExchange(expected: Self.decided, desired: Self.entered, ordering: .sequentiallyConsistent).exchanged
    }

    /// Ends a run that began. Returns whether tasks may be waiting for it: then the caller takes
    /// them, under the lock, with ``takeWaiters(_:)``.
    @inline(__always)
    func end() -> Bool {
        state.store(Self.idle, ordering: .sequentiallyConsistent)
        return mayHaveWaiters.load(ordering: .sequentiallyConsistent)
    }

    /// Stops a decided run that has not begun. Under its shard's lock. Returns whether it stopped
    /// one (then that run is not counted).
    func stopDecided() -> Bool {
        state.compareExchange(expected: Self.decided, desired: Self.stopped, ordering: .sequentiallyConsistent).exchanged
    }

    /// Forgets a decided run that was stopped before it began. Under its shard's lock.
    func abandon() {
        state.store(Self.idle, ordering: .sequentiallyConsistent)
    }

    /// Whether a run has begun and not yet returned.
    var isUnderWay: Bool {
        state.load(ordering: .sequentiallyConsistent) == Self.entered
    }

    /// Adds a task waiting for the run under way, unless it has ended. Under its shard's lock;
    /// returns whether the task waits (else the caller resumes it at once).
    func addWaiter(_ waiter: CheckedContinuation<Void, Never>, to waiters: inout [CheckedContinuation<Void, Never>]) -> Bool {
        // Announce the waiter, then look: the running thread ends the run, then looks for waiters,
        // so one of the two sees the other.
        mayHaveWaiters.store(true, ordering: .sequentiallyConsistent)
        guard isUnderWay else {
            if waiters.isEmpty { mayHaveWaiters.store(false, ordering: .sequentiallyConsistent) }
            return false
        }
        waiters.append(waiter)
        return true
    }

    /// Takes the tasks waiting for the run that ended. Under its shard's lock.
    func takeWaiters(_ waiters: inout [CheckedContinuation<Void, Never>]) -> [CheckedContinuation<Void, Never>] {
        mayHaveWaiters.store(false, ordering: .sequentiallyConsistent)
        defer { waiters = [] }
        return waiters
    }
}
