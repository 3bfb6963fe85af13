import Foundation

/// A countdown to a deadline: "resend the code in 59 s", "the sale ends at 20:00".
///
/// What it shows is always computed from the deadline and the clock — the remaining time is
/// `deadline − now`, never a count of ticks — so nothing can make it drift, freeze or reset: not a
/// busy thread, not a machine that slept, not a late tick.
///
/// ```swift
/// let countdown = try Countdown.start(to: .after(.seconds(60))) { _, tick in
///     print(tick.isFinished ? "Resend code" : "Resend in \(tick.formatted(.units()))")
/// }
/// ```
///
/// ## Ticks and the rounding rule
///
/// A countdown ticks once when it starts and then each time the value it shows changes. The value is
/// the remaining time in whole ``unit``s, **rounded up**: with a unit of one second, 2.3 s remaining
/// shows 3, exactly 2 s shows 2, and 0 is shown only at the deadline itself. So a 3 s countdown
/// ticks 3 (at the start), 2 (1 s later), 1 (2 s later) and 0 (at the deadline): the final tick,
/// whose ``Tick/isFinished`` is `true`, comes exactly once — also when the countdown is created after
/// its deadline (it is the only tick then) and after a machine slept past it.
///
/// The ticks after the first lie on the deadline's grid, `deadline − k·unit`: countdowns to the same
/// deadline with the same unit on the same clock tick at the same instants, whoever created them
/// when. A tick that comes late (a busy delivery queue) shows the value of the moment it runs; ticks
/// missed while nothing could run (a machine asleep) are not replayed: the next tick shows the
/// current value (the engine's coalescing, C5).
///
/// ## Clocks
///
/// ``TimerClock/continuous`` (the default) counts time while the machine sleeps: a 60 s countdown
/// ends 60 s later whatever happened meanwhile. Use ``TimerClock/wall`` for a deadline that is a
/// calendar instant ("the sale ends at 20:00"): it follows changes to the system clock (C1).
///
/// ## Pausing
///
/// ``pause()`` freezes the remaining time to the nanosecond of the clock; ``resume()`` sets a new
/// deadline, `now + remaining`. A countdown paused at 41.3 s remaining resumes from 41.3 s and ticks
/// next when 41.0 s remain; nothing is replayed on resume. On the wall clock this means that pausing
/// moves the deadline: a countdown to 20:00 paused for five minutes ends at 20:05.
///
/// ## Lifetime and threads
///
/// Like a timer, a running countdown runs to its end whether or not you keep it (C12), and
/// ``cancel()`` ends it at once (C8). A paused countdown is held only by its handles: dropping the
/// last one releases it. Every method is safe from any thread (C13); ticks never overlap (C14) and
/// are delivered where you ask (C15). The owner-bound forms hold their owner weakly and end the
/// countdown once it is gone (C11).
public final class Countdown: @unchecked Sendable {
    /// What a countdown's handler receives.
    typealias Handler = @Sendable (Countdown, Tick) -> Void

    private struct State {
        /// The deadline, in nanoseconds on the clock; moved by ``resume()``.
        var deadline: Int64
        /// The remaining time frozen by ``pause()``, or `nil` while running.
        var pausedRemaining: Int64?
        var isFinished = false
        /// The timer of the current run (none while paused or after the end).
        var timer: ScheduledTimer?

        /// The remaining time at `now`: frozen while paused, never negative.
        func remaining(at now: Int64) -> Int64 {
            pausedRemaining ?? max(0, now.duration(to: deadline))
        }
    }

    /// The clock the countdown runs on.
    public let clock: TimerClock

    /// The unit the countdown shows its remaining time in, and ticks at: one second by default.
    public let unit: Duration

    let unitNanoseconds: Int64
    private let delivery: TimerDelivery
    private let handler: Handler
    private let state: Locked<State>

    init(deadline: Int64, unit: Int64, clock: TimerClock, delivery: TimerDelivery, handler: @escaping Handler) {
        self.clock = clock
        self.unit = .nanoseconds(unit)
        self.unitNanoseconds = unit
        self.delivery = delivery
        self.handler = handler
        self.state = Locked(State(deadline: deadline))
    }

    // MARK: Reading

    /// The instant the countdown ends. While it is paused, the deadline it had; ``resume()`` moves
    /// it.
    public var deadline: TimerInstant {
        TimerInstant(kind: clock.kind, nanoseconds: state.withLock { $0.deadline })
    }

    /// The time left, exact to the nanosecond of the clock: `deadline − now` while running (never
    /// below zero), frozen while paused.
    public var remaining: Duration {
        .nanoseconds(remainingNanoseconds(now: clock.nanosecondsNow))
    }

    /// What the countdown shows now: ``remaining`` in whole ``unit``s, rounded up.
    public var value: Int64 { Self.value(remainingNanoseconds(now: clock.nanosecondsNow), unit: unitNanoseconds) }

    /// Whether the countdown is paused.
    public var isPaused: Bool { state.withLock { $0.pausedRemaining != nil } }

    /// Whether the countdown has ended: its final tick was delivered, or it was cancelled.
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    /// What a display shows now: the value, the remaining time (frozen while paused) and the
    /// deadline, read at this instant. For drawing outside a tick — after ``pause()`` or
    /// ``resume()``, or when a view appears; ticks still come only when the value changes.
    public var currentTick: Tick {
        let now = clock.nanosecondsNow
        let (remaining, deadline) = state.withLock { ($0.remaining(at: now), $0.deadline) }
        return Tick(
            value: Self.value(remaining, unit: unitNanoseconds), remaining: .nanoseconds(remaining), unit: unit,
            instant: TimerInstant(kind: clock.kind, nanoseconds: now), deadline: TimerInstant(kind: clock.kind, nanoseconds: deadline))
    }

    private func remainingNanoseconds(now: Int64) -> Int64 {
        state.withLock { $0.remaining(at: now) }
    }

    // MARK: Controlling

    /// Freezes the remaining time, exact to the nanosecond of the clock; no tick comes until
    /// ``resume()``. Idempotent; does nothing once the countdown has ended.
    public func pause() {
        let now = clock.nanosecondsNow
        let timer = state.withLock { state -> ScheduledTimer? in
            guard !state.isFinished, state.pausedRemaining == nil else { return nil }
            state.pausedRemaining = max(0, now.duration(to: state.deadline))
            defer { state.timer = nil }
            return state.timer
        }
        timer?.invalidate()
    }

    /// Continues a paused countdown from the remaining time it was paused at: its deadline becomes
    /// `now + remaining`, and it ticks next when the value shown changes. Idempotent.
    public func resume() {
        let now = clock.nanosecondsNow
        let resumed = state.withLock { state -> Bool in
            guard !state.isFinished, let paused = state.pausedRemaining else { return false }
            state.pausedRemaining = nil
            state.deadline = now.addingSaturating(paused)
            return true
        }
        if resumed { run(now: now, tickNow: false) }
    }

    /// Ends the countdown without a final tick (C8): once this returns, no tick begins. Idempotent.
    public func cancel() {
        let timer = state.withLock { state -> ScheduledTimer? in
            state.isFinished = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.invalidate()
    }

    // MARK: Running

    /// Starts (or restarts after a pause) the timer that ticks on the deadline's grid; with
    /// `tickNow`, delivers a tick with the current value first.
    func run(now: Int64, tickNow: Bool) {
        let unit = unitNanoseconds
        let start = state.withLock { state -> (first: Int64, deadline: Int64)? in
            guard !state.isFinished, state.pausedRemaining == nil else { return nil }
            let value = Self.value(max(0, now.duration(to: state.deadline)), unit: unit)
            // The next change of the value shown: when `value − 1` units remain (the deadline itself
            // for the last one), or at once when the deadline has come.
            let next = value == 0 ? now : state.deadline.addingSaturating(-(value - 1).multipliedSaturating(by: unit))
            return (next, state.deadline)
        }
        guard let start else { return }
        do {
            let timer = try ScheduledTimer.make(
                interval: .nanoseconds(unit), first: .at(TimerInstant(kind: clock.kind, nanoseconds: start.first)),
                tolerance: .zero, clock: clock, policy: .coalesce, delivery: delivery, suspended: true,
                handler: { [self] timer, fire in tick(timer, fire) })
            let installed = state.withLock { state -> Bool in
                guard !state.isFinished, state.pausedRemaining == nil, state.deadline == start.deadline else { return false }
                state.timer = timer
                return true
            }
            guard installed else {
                timer.invalidate()
                return
            }
            // The first tick shows the value at the start; a countdown already past its deadline
            // has only its final tick, from the timer.
            if tickNow && start.first != now { timer.fire() }
            timer.resume()
        } catch {
            // The clock was shut down: the countdown ends without a tick, like its timers.
            state.withLock { $0.isFinished = true }
        }
    }

    /// One fire of the current timer: computes the value from the deadline and the instant, and
    /// delivers it; the value 0 is the final tick.
    private func tick(_ timer: ScheduledTimer, _ fire: TimerFire) {
        let now = fire.firedAt.nanoseconds
        let tick = state.withLock { state -> Tick? in
            guard !state.isFinished, state.pausedRemaining == nil, state.timer === timer else { return nil }
            let remaining = max(0, now.duration(to: state.deadline))
            let value = Self.value(remaining, unit: unitNanoseconds)
            if value == 0 {
                state.isFinished = true
                state.timer = nil
            }
            return Tick(
                value: value, remaining: .nanoseconds(remaining), unit: unit,
                instant: fire.firedAt, deadline: TimerInstant(kind: clock.kind, nanoseconds: state.deadline))
        }
        guard let tick else {
            // A timer from before a pause or a cancel: it has no more to say.
            timer.invalidate()
            return
        }
        if tick.isFinished { timer.invalidate() }
        handler(self, tick)
    }

    // MARK: Arithmetic

    /// `remaining / unit`, rounded up; both non-negative, `unit` positive.
    static func value(_ remaining: Int64, unit: Int64) -> Int64 {
        remaining / unit + (remaining % unit == 0 ? 0 : 1)
    }
}
