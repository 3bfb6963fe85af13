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
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                do {
                    let callback = try schedule(at: .at(deadline), tolerance: tolerance ?? .zero) {
                        continuation.resume()
                    }
                    sleeper.started(callback, continuation)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            sleeper.cancel()
        }
    }
}

/// One sleeping task: the engine's callback resumes it at the deadline, or a cancellation resumes
/// it with `CancellationError` — whichever comes first, exactly once. The engine decides: a
/// callback whose `cancel()` returned `true` never runs (C8), so only then does the cancellation
/// resume the task.
private final class Sleeper: Sendable {
    private enum Phase {
        case starting
        case sleeping(ScheduledCallback, UnsafeContinuation<Void, any Error>)
        case cancelled
    }

    private let phase = Locked(Phase.starting)

    /// The callback is scheduled; a cancellation that came first ends the sleep now.
    func started(_ callback: ScheduledCallback, _ continuation: UnsafeContinuation<Void, any Error>) {
        let cancelledFirst = phase.withLock { phase -> Bool in
            if case .cancelled = phase { return true }
            phase = .sleeping(callback, continuation)
            return false
        }
        if cancelledFirst && callback.cancel() { continuation.resume(throwing: CancellationError()) }
    }

    func cancel() {
        let sleeping = phase.withLock { phase -> (ScheduledCallback, UnsafeContinuation<Void, any Error>)? in
            defer { phase = .cancelled }
            if case .sleeping(let callback, let continuation) = phase { return (callback, continuation) }
            return nil
        }
        guard let (callback, continuation) = sleeping else { return }
        if callback.cancel() { continuation.resume(throwing: CancellationError()) }
    }
}
