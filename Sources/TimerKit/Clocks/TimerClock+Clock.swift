extension TimerInstant: InstantProtocol {}

/// TimerKit's clocks are Swift `Clock`s: `Task.sleep(for:tolerance:clock:)`, `clock.sleep(until:)`
/// and every API generic over `Clock` run on a TimerKit clock's engine.
///
/// ```swift
/// try await Task.sleep(for: .seconds(5), tolerance: .milliseconds(500), clock: TimerClock.continuous)
/// ```
///
/// A sleeping task is one entry in the clock's store — no thread, no kernel object of its own —
/// resumed by the engine at its deadline; a tolerance lets the engine serve it with a wake-up it
/// makes anyway (C3), which `Task.sleep` on `ContinuousClock` does not do on Linux. Cancelling the
/// task ends the sleep at once with `CancellationError`. On a virtual clock (`TimerKitTesting`), a
/// sleep ends when the clock is advanced past its deadline.
extension TimerClock: Clock {
    public typealias Instant = TimerInstant

    /// One nanosecond: the unit of every TimerKit instant.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends the task until `deadline` on this clock, or until it is cancelled.
    ///
    /// - Parameters:
    ///   - deadline: An instant of this clock; one in the past ends the sleep at once (C17).
    ///   - tolerance: How much later the sleep may end, so that wake-ups can be shared (C3); none
    ///     by default.
    /// - Throws: `CancellationError` when the task is cancelled before or during the sleep;
    ///   ``TimerError/clockMismatch(expected:got:)`` for an instant of another clock;
    ///   ``TimerError/clockShutDown`` on a clock that was shut down;
    ///   ``TimerError/negativeTolerance(_:)`` for a negative tolerance.
    public func sleep(until deadline: TimerInstant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        guard deadline.clockKind == kind else { throw TimerError.clockMismatch(expected: kind, got: deadline.clockKind) }
        _ = try ScheduledTimer.validatedTolerance(tolerance ?? .zero)
        // A deadline that has come ends the sleep at once (C17), also on a virtual clock that
        // nobody advances.
        guard deadline > now else { return }
        let sleeper = Sleeper(deadline: deadline.nanoseconds)
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                sleeper.wait(continuation, on: engine)
                do {
                    // The callback's closure holds the only reference to the wake-up: when the
                    // engine releases it without running it — cancelled, or its clock shut
                    // down — the sleeper is resumed too, so no sleeping task is ever lost.
                    let wakeUp = WakeUp(sleeper)
                    let callback = try schedule(at: .at(deadline), tolerance: tolerance ?? .zero) { wakeUp.fire() }
                    sleeper.scheduled(callback)
                } catch {
                    sleeper.end(throwing: error)
                }
            }
        } onCancel: {
            sleeper.cancel()
        }
    }
}

/// One sleeping task, resumed exactly once: by its callback at the deadline, or with an error when
/// the callback is released unrun — `CancellationError` after a cancellation (a callback whose
/// `cancel()` returned `true` never runs, C8), ``TimerError/clockShutDown`` when its clock was shut
/// down.
final class Sleeper: Sendable {
    private struct State {
        var continuation: UnsafeContinuation<Void, any Error>?
        var callback: ScheduledCallback?
        var isCancelled = false
        var engine: TimerEngine?
    }

    /// The deadline, in the clock's nanoseconds.
    let deadline: Int64
    private let state = Locked(State())

    init(deadline: Int64) {
        self.deadline = deadline
    }

    /// The task is suspended; a virtual clock lists it among its sleepers until it is resumed.
    func wait(_ continuation: UnsafeContinuation<Void, any Error>, on engine: TimerEngine) {
        state.withLock {
            $0.continuation = continuation
            if engine.isVirtual { $0.engine = engine }
        }
        if engine.isVirtual { engine.sleepers.withLock { $0[ObjectIdentifier(self)] = self } }
    }

    /// The callback is scheduled; a cancellation that came first cancels it now.
    func scheduled(_ callback: ScheduledCallback) {
        let cancelledFirst = state.withLock { state -> Bool in
            state.callback = callback
            return state.isCancelled
        }
        if cancelledFirst { callback.cancel() }
    }

    func cancel() {
        let callback = state.withLock { state -> ScheduledCallback? in
            state.isCancelled = true
            return state.callback
        }
        // If this wins, the engine releases the callback's closure, and its wake-up resumes the
        // task with CancellationError.
        callback?.cancel()
    }

    /// Resumes the task: normally when `error` is nil, else by throwing it; later calls do nothing.
    func end(throwing error: (any Error)?) {
        let (continuation, engine) = state.withLock { state in
            defer {
                state.continuation = nil
                state.callback = nil
                state.engine = nil
            }
            return (state.continuation, state.engine)
        }
        guard let continuation else { return }
        _ = engine?.sleepers.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }

    /// The callback was released without running.
    fileprivate func released() {
        let isCancelled = state.withLock { $0.isCancelled }
        end(throwing: isCancelled ? CancellationError() : TimerError.clockShutDown)
    }
}

/// What a sleeper's callback holds: it resumes the sleeper when it runs, and when it is released
/// unrun.
private final class WakeUp: Sendable {
    private let sleeper: Sleeper

    init(_ sleeper: Sleeper) {
        self.sleeper = sleeper
    }

    func fire() {
        sleeper.end(throwing: nil)
    }

    deinit {
        sleeper.released()
    }
}
