import Foundation
@_spi(VirtualTime) import TimerKit

/// A clock that moves only when you advance it, for testing timer code exactly and instantly (C1).
///
/// Timers run on it exactly as on a system clock — same grid, same missed-deadline policies, same
/// lifecycle — but nothing fires until the test advances the clock. Advancing fires every timer
/// that comes due on the way, in (deadline, creation) order, with ``now`` set to each deadline
/// before its timer fires. Handlers run before `advance` returns, on the advancing thread (or
/// synchronously on the timer's delivery queue), so no sleeps or yields are ever needed.
///
/// ```swift
/// let clock = VirtualClock()
/// let ticks = Mutex(0)
/// let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock) { _, _ in
///     ticks.withLock { $0 += 1 }
/// }
/// clock.advance(by: .seconds(3))   // ticks == 3, at once
/// ```
///
/// Time never moves backwards: advancing to an earlier instant does nothing. Advancing is not
/// reentrant: a handler must not advance its own clock. When the clock is released, every timer
/// still on it is invalidated, so that they and what their handlers captured are released too.
///
/// ## Async code
///
/// A virtual clock is a `Clock`, and so is its ``clock``: `Task.sleep(for:clock:)`, `withTimeout`
/// and any code generic over `Clock` sleep on it. Run that code on the clock's ``executor`` —
/// `Task(executorPreference: virtual.executor) { … }` — and the async forms of
/// ``advance(by:)-(Duration)async``, ``advance(to:)-(TimerInstant)async`` and ``run(maxFires:)`` are
/// exact: they resume the sleepers that come due, in (deadline, creation) order, and return only
/// once the code they resumed has run until it is suspended again or has finished — no yields, no
/// polling. TimerKit's article "Testing async code with VirtualClock" says what that covers and
/// what it does not.
public final class VirtualClock: Sendable {
    /// The ``TimerClock`` to create timers on.
    public let clock: TimerClock

    private let virtualExecutor: VirtualExecutor

    /// The task executor (SE-0417) on which async code under test runs, so that the async forms of
    /// `advance` know when it has run as far as it can.
    ///
    /// ```swift
    /// let poller = Task(executorPreference: virtual.executor) { await model.poll(every: .seconds(1), clock: virtual) }
    /// await virtual.advance(by: .seconds(3))   // the poll loop ran three times and sleeps again
    /// ```
    ///
    /// Child tasks (`async let`, task groups) inherit the preference, and default actors called by
    /// the code run on it too; a new unstructured task does not — give it the preference as well.
    public var executor: any TaskExecutor { virtualExecutor }

    /// Creates a virtual clock that reads `start` after its origin.
    public init(start: Duration = .zero) {
        let executor = VirtualExecutor()
        virtualExecutor = executor
        clock = TimerClock._makeVirtual(
            startingAt: start.components.seconds * 1_000_000_000 + start.components.attoseconds / 1_000_000_000, taskExecutor: executor)
    }

    /// Releasing the clock invalidates its timers and resumes the tasks still sleeping on it with
    /// ``TimerKit/TimerError/clockShutDown``, and says so on standard error: a test that ends with
    /// sleeping tasks has leaked them.
    deinit {
        let sleepers = clock._virtualSleeperDeadlines
        if !sleepers.isEmpty {
            let deadlines = sleepers.map { String(describing: TimerInstant(kind: .virtual, nanoseconds: $0)) }.joined(separator: ", ")
            FileHandle.standardError.write(
                Data(
                    "VirtualClock released with \(sleepers.count) task(s) still sleeping on it (deadlines: \(deadlines)); they are resumed with TimerError.clockShutDown\n"
                        .utf8))
        }
        clock._shutDownVirtual()
        virtualExecutor.shutDown()
    }

    /// The deadlines of the tasks sleeping on this clock, earliest first.
    ///
    /// A test that ends with a sleeper has left a task behind — swift-clocks' `checkSuspension()`:
    /// `#expect(virtual.sleepers.isEmpty)`.
    public var sleepers: [TimerInstant] {
        clock._virtualSleeperDeadlines.map { TimerInstant(kind: .virtual, nanoseconds: $0) }
    }

    /// The current instant.
    public var now: TimerInstant { clock.now }

    /// The number of timers waiting for a deadline (suspended timers are not counted).
    public var pendingTimerCount: Int { clock.pendingTimerCount }

    /// The earliest deadline of the pending timers, if any.
    public var nextDeadline: TimerInstant? {
        clock._earliestVirtualDeadline.map { TimerInstant(kind: .virtual, nanoseconds: $0) }
    }

    /// Moves the clock forward by `duration`, firing every timer due on the way. A timer whose
    /// deadline has already come (a `.now` start, say) fires even when advancing by zero.
    ///
    /// - Returns: The number of handler runs.
    @discardableResult
    public func advance(by duration: Duration) -> Int {
        advance(to: now.advanced(by: max(duration, .zero)))
    }

    /// Moves the clock forward to `instant`, firing every timer due on the way. Does nothing but
    /// fire already-due timers if `instant` is not after ``now``.
    ///
    /// - Returns: The number of handler runs.
    /// - Precondition: `instant` is an instant of a virtual clock.
    @discardableResult
    public func advance(to instant: TimerInstant) -> Int {
        precondition(instant.clockKind == .virtual, "VirtualClock.advance(to:): \(instant) is not a virtual-clock instant")
        return clock._advanceVirtualTime(to: instant.nanoseconds, maxFires: .max)
    }

    /// Moves the clock forward by `duration` in one step, as if nothing could run on the way — a
    /// machine asleep, a blocked engine or queue — then fires what is due (C5).
    ///
    /// Where ``advance(by:)`` stops at every deadline, so a repeating timer fires for each one, a
    /// jump lets every due timer fire once, at the new ``now``, and its missed-deadline policy
    /// decides what the deadlines it missed mean: one coalesced fire whose
    /// ``TimerFire/deadlineCount`` counts them, a skip reported in the next fire's
    /// ``TimerFire/skippedDeadlineCount``, or a burst. Callbacks and one-shot timers that came due
    /// fire once each, late. Timers fire in (deadline, creation) order.
    ///
    /// - Returns: The number of handler runs.
    @discardableResult
    public func jump(by duration: Duration) -> Int {
        jump(to: now.advanced(by: max(duration, .zero)))
    }

    /// Moves the clock to `instant` in one step, as if nothing could run on the way, then fires
    /// what is due there (see ``jump(by:)``). Does nothing but fire already-due timers if `instant`
    /// is not after ``now``.
    ///
    /// - Returns: The number of handler runs.
    /// - Precondition: `instant` is an instant of a virtual clock.
    @discardableResult
    public func jump(to instant: TimerInstant) -> Int {
        precondition(instant.clockKind == .virtual, "VirtualClock.jump(to:): \(instant) is not a virtual-clock instant")
        return clock._jumpVirtualTime(to: instant.nanoseconds)
    }

    /// Advances from deadline to deadline until no timer is pending, or until `maxFires` handler
    /// runs have happened (a repeating timer never lets the clock go idle).
    ///
    /// - Returns: The number of handler runs.
    @discardableResult
    public func runUntilIdle(maxFires: Int = 10_000) -> Int {
        var fires = 0
        while fires < maxFires, let deadline = clock._earliestVirtualDeadline {
            fires += clock._advanceVirtualTime(to: deadline, maxFires: maxFires - fires)
        }
        return fires
    }

    // MARK: Async code

    /// Moves the clock forward by `duration`, resuming every sleeper and firing every timer due on
    /// the way, and returns once the async code running on ``executor`` has run as far as it can.
    ///
    /// First the code already running on the executor runs until it is suspended; then, deadline
    /// by deadline, what is due there runs — timers on this thread, sleepers on the executor — and
    /// the clock waits again until the code they resumed is suspended or finished before it moves
    /// on. So a sleep that ends, work, and a new sleep before the target are all done when this
    /// returns. Advancing by zero runs what is due now: the way to let code just started reach its
    /// first sleep.
    ///
    /// - Returns: The number of timer and sleeper runs.
    /// - Precondition: Not called from code running on ``executor`` (it would wait for itself).
    @discardableResult
    public func advance(by duration: Duration) async -> Int {
        await advance(to: now.advanced(by: max(duration, .zero)))
    }

    /// Moves the clock forward to `instant` as ``advance(by:)-(Duration)async`` does.
    ///
    /// - Returns: The number of timer and sleeper runs.
    /// - Precondition: `instant` is an instant of a virtual clock, and this is not called from code
    ///   running on ``executor``.
    @discardableResult
    public func advance(to instant: TimerInstant) async -> Int {
        precondition(instant.clockKind == .virtual, "VirtualClock.advance(to:): \(instant) is not a virtual-clock instant")
        precondition(!virtualExecutor.isCurrent, "VirtualClock.advance: called from code on the clock's executor, which would wait for itself")
        await virtualExecutor.quiescence()
        var fires = 0
        while let deadline = clock._earliestVirtualDeadline, deadline <= instant.nanoseconds {
            fires += clock._advanceVirtualTime(to: deadline, maxFires: .max)
            await virtualExecutor.quiescence()
        }
        fires += clock._advanceVirtualTime(to: instant.nanoseconds, maxFires: .max)
        await virtualExecutor.quiescence()
        return fires
    }

    /// Advances from deadline to deadline, as ``advance(by:)-(Duration)async`` does, until nothing
    /// is pending — no timer, no sleeper — or until `maxFires` runs have happened (a repeating
    /// timer never lets the clock go idle).
    ///
    /// - Returns: The number of timer and sleeper runs.
    /// - Precondition: Not called from code running on ``executor``.
    @discardableResult
    public func run(maxFires: Int = 10_000) async -> Int {
        precondition(!virtualExecutor.isCurrent, "VirtualClock.run: called from code on the clock's executor, which would wait for itself")
        await virtualExecutor.quiescence()
        var fires = 0
        while fires < maxFires, let deadline = clock._earliestVirtualDeadline {
            fires += clock._advanceVirtualTime(to: deadline, maxFires: maxFires - fires)
            await virtualExecutor.quiescence()
        }
        return fires
    }
}

extension VirtualClock: Clock {
    public typealias Instant = TimerInstant

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends the task until the clock is advanced to `deadline` (see
    /// ``TimerKit/TimerClock/sleep(until:tolerance:)``).
    public func sleep(until deadline: TimerInstant, tolerance: Duration? = nil) async throws {
        try await clock.sleep(until: deadline, tolerance: tolerance)
    }
}
