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
public final class VirtualClock: Sendable {
    /// The ``TimerClock`` to create timers on.
    public let clock: TimerClock

    /// Creates a virtual clock that reads `start` after its origin.
    public init(start: Duration = .zero) {
        clock = TimerClock._makeVirtual(startingAt: start.components.seconds * 1_000_000_000 + start.components.attoseconds / 1_000_000_000)
    }

    deinit {
        clock._shutDownVirtual()
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
}
