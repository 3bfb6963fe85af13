/// Runs `operation` with a time limit on a TimerKit clock: if it has not finished `limit` after the
/// call, it is cancelled and the call throws ``TimeoutError``.
///
/// ```swift
/// let profile = try await withTimeout(.seconds(10)) { try await api.fetchProfile() }
/// ```
///
/// The limit is counted on `clock` (continuous by default); on a virtual clock (`TimerKitTesting`)
/// the timeout comes exactly when the clock is advanced to it. Like every structured-concurrency
/// timeout, the call returns once the operation has stopped: cancellation is cooperative, so an
/// operation that ignores it delays the error until it returns (its result is then discarded).
///
/// - Parameters:
///   - limit: How long the operation may take.
///   - tolerance: How much later the timeout may come, so that wake-ups can be shared (C3); none
///     by default.
///   - clock: The clock the limit is counted on.
///   - operation: The work. Its errors are rethrown.
/// - Throws: ``TimeoutError`` at the limit, the operation's own errors, `CancellationError` when
///   the calling task is cancelled, and the errors of ``TimerClock/sleep(until:tolerance:)``.
public func withTimeout<Result: Sendable>(
    _ limit: Duration,
    tolerance: Duration? = nil,
    clock: TimerClock = .continuous,
    operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let start = clock.now
    return try await race(operation, deadline: start.advanced(by: limit), limit: limit, start: start, tolerance: tolerance, clock: clock)
}

/// Runs `operation` until a deadline on a TimerKit clock: if it has not finished by `deadline`, it
/// is cancelled and the call throws ``TimeoutError``. A deadline that has passed cancels the
/// operation at once.
///
/// ```swift
/// let deadline = TimerClock.continuous.now + .seconds(30)
/// for host in hosts { try await withDeadline(deadline) { try await ping(host) } }   // 30 s for all
/// ```
///
/// See ``withTimeout(_:tolerance:clock:operation:)`` for how cancellation works.
///
/// - Throws: ``TimeoutError`` at the deadline, the operation's own errors, `CancellationError`
///   when the calling task is cancelled, ``TimerError/clockMismatch(expected:got:)`` for an
///   instant of another clock.
public func withDeadline<Result: Sendable>(
    _ deadline: TimerInstant,
    tolerance: Duration? = nil,
    clock: TimerClock = .continuous,
    operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await race(operation, deadline: deadline, limit: nil, start: clock.now, tolerance: tolerance, clock: clock)
}

/// The operation against a sleep until the deadline, in a task group: the first to finish wins and
/// the other is cancelled.
private func race<Result: Sendable>(
    _ operation: @escaping @Sendable () async throws -> Result,
    deadline: TimerInstant, limit: Duration?, start: TimerInstant, tolerance: Duration?, clock: TimerClock
) async throws -> Result {
    guard deadline.clockKind == clock.kind else { throw TimerError.clockMismatch(expected: clock.kind, got: deadline.clockKind) }
    return try await withThrowingTaskGroup(of: RaceOutcome<Result>.self) { group in
        group.addTask { .finished(try await operation()) }
        group.addTask {
            try await clock.sleep(until: deadline, tolerance: tolerance)
            return .timedOut(clock.now)
        }
        defer { group.cancelAll() }
        switch try await group.next() {
        case .finished(let result): return result
        case .timedOut(let now): throw TimeoutError(limit: limit, deadline: deadline, waited: now - start)
        case nil: preconditionFailure("withTimeout: the task group lost its tasks")
        }
    }
}

/// Who won the race of ``withTimeout(_:tolerance:clock:operation:)``.
private enum RaceOutcome<Result: Sendable>: Sendable {
    case finished(Result)
    case timedOut(TimerInstant)
}
