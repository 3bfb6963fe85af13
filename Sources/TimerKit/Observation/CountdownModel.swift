import Foundation
import Observation

/// A countdown for a view: the "resend the code in 59 s" button, the flash sale ending at 20:00 —
/// an `@Observable` model on the main actor that SwiftUI redraws from, without a timer to keep,
/// invalidate or leak.
///
/// ```swift
/// struct ResendButton: View {
///     @State private var countdown = CountdownModel()
///
///     var body: some View {
///         Button(countdown.isRunning ? "Resend in \(countdown.value) s" : "Resend code") {
///             try? countdown.start(for: .seconds(60))
///         }
///         .disabled(countdown.isRunning)
///     }
/// }
/// ```
///
/// It runs a ``Countdown`` and shows its ticks: ``value`` (the remaining time in whole ``unit``s,
/// rounded up — `Countdown`'s rule, so 0 only at the deadline), ``remaining``, ``text`` and
/// ``progress`` change once per unit, on the deadline's grid, computed from the deadline and the
/// clock: nothing drifts while the main thread is busy, and nothing freezes while a scroll view
/// tracks (no run loop mode is involved).
///
/// ## Lifetime
///
/// The model owns its countdown; the countdown holds the model weakly (C11). Releasing the model —
/// the view goes away — cancels the countdown at once: no tick runs for a model that is gone, and
/// nothing needs to be invalidated by hand.
///
/// ## Testing
///
/// Give it a `VirtualClock` (TimerKitTesting)'s clock: advancing the clock on the main actor delivers the ticks
/// there and then, so a test reads the exact values after each step (on Linux too, with
/// `withObservationTracking` to see which properties changed).
@MainActor
@Observable
public final class CountdownModel {
    /// What the countdown shows: the remaining time in whole ``unit``s, rounded up.
    public private(set) var value: Int64 = 0

    /// The remaining time at the last change: a tick, a pause, a resume or the start.
    public private(set) var remaining: Duration = .zero

    /// The length of the countdown started last: its remaining time when it started.
    public private(set) var total: Duration = .zero

    /// Whether the countdown is counting down: started, not paused, not finished or cancelled.
    public private(set) var isRunning = false

    /// Whether the countdown is paused.
    public private(set) var isPaused = false

    /// Whether the countdown reached its deadline (its final tick came). A cancelled countdown has
    /// not finished.
    public private(set) var isFinished = false

    /// ``value`` as people read it, in ``style``.
    public private(set) var text: String

    /// How a countdown's value reads: `0:59` (``Countdown/Tick/Style/clock``, the default) or
    /// `59 sec`.
    public var style: Countdown.Tick.Style {
        didSet { text = Self.text(value: value, unit: unit, style: style) }
    }

    /// The share of the countdown behind it, from 0 at the start to 1 at the deadline, by the
    /// value shown: a progress bar that moves with the text.
    public var progress: Double {
        guard total > .zero else { return isFinished ? 1 : 0 }
        return min(1, max(0, 1 - (unit * value) / total))
    }

    /// The unit the countdown shows its remaining time in, and ticks at.
    public let unit: Duration

    /// The clock it runs on (C1).
    public let clock: TimerClock

    /// The countdown that runs now (behind a lock: the model's `deinit` cancels it, off the main
    /// actor).
    let current = Locked<Countdown?>(nil)

    /// A model that shows nothing yet: ``start(to:)`` starts it.
    ///
    /// - Parameters:
    ///   - unit: What the countdown counts in, and ticks at; one second by default.
    ///   - clock: The clock (C1); continuous by default: the time passes while the device sleeps.
    ///   - style: How ``text`` reads.
    public init(unit: Duration = .seconds(1), clock: TimerClock = .continuous, style: Countdown.Tick.Style = .clock) {
        self.unit = unit
        self.clock = clock
        self.style = style
        self.text = Self.text(value: 0, unit: unit, style: style)
    }

    deinit {
        current.withLock { $0 }?.cancel()
    }

    // MARK: Controlling

    /// Starts counting down to `deadline`, replacing the countdown under way.
    ///
    /// - Parameter deadline: `.after(_:)` a duration from now, `.at(_:)` an instant of the clock,
    ///   or `.date(_:)` a calendar date (on the wall clock the exact instant — "the sale ends at
    ///   20:00"; on the others the time until then, how an app relaunched mid-countdown resumes).
    /// - Throws: ``TimerError`` for a unit of zero or less, a duration that overflows, an instant of
    ///   another clock, or a shut-down clock. The countdown under way, if any, goes on then.
    public func start(to deadline: TimerStart) throws(TimerError) {
        let countdown = try Countdown.make(
            deadline: deadline, unit: unit, clock: clock, delivery: .queue(.main), suspended: true,
            handler: TimerHandler<Countdown, Countdown.Tick>.onMainActor(bound: self) { model, countdown, tick in
                model.show(tick, of: countdown)
            }.closure(endingWith: { $0.cancel() }))
        current.withLock { $0 }?.cancel()
        current.withLock { $0 = countdown }
        let tick = countdown.currentTick
        total = tick.remaining
        isFinished = false
        isPaused = false
        isRunning = !tick.isFinished
        show(tick)
        countdown.run(now: tick.instant.nanoseconds, tickNow: false)
    }

    /// Starts counting down for `duration`, replacing the countdown under way.
    ///
    /// - Throws: ``TimerError`` as ``start(to:)`` does.
    public func start(for duration: Duration) throws(TimerError) {
        try start(to: .after(duration))
    }

    /// Freezes the countdown (see ``Countdown/pause()``). Does nothing unless it is running.
    public func pause() {
        guard isRunning, let countdown = current.withLock({ $0 }) else { return }
        countdown.pause()
        isRunning = false
        isPaused = true
        show(countdown.currentTick)
    }

    /// Continues a paused countdown from where it was paused (see ``Countdown/resume()``).
    public func resume() {
        guard isPaused, let countdown = current.withLock({ $0 }) else { return }
        countdown.resume()
        isPaused = false
        isRunning = true
        show(countdown.currentTick)
    }

    /// Stops the countdown without finishing it: no tick comes after this; what it showed stays.
    public func cancel() {
        current.withLock { countdown in
            defer { countdown = nil }
            return countdown
        }?.cancel()
        isRunning = false
        isPaused = false
    }

    // MARK: Showing

    /// A tick of the countdown under way (a replaced one's are ignored).
    private func show(_ tick: Countdown.Tick, of countdown: Countdown) {
        guard current.withLock({ $0 === countdown }) else { return }
        show(tick)
        if tick.isFinished {
            isRunning = false
            isPaused = false
            isFinished = true
        }
    }

    private func show(_ tick: Countdown.Tick) {
        if value != tick.value { value = tick.value }
        if remaining != tick.remaining { remaining = tick.remaining }
        let text = Self.text(value: tick.value, unit: unit, style: style)
        if self.text != text { self.text = text }
    }

    private static func text(value: Int64, unit: Duration, style: Countdown.Tick.Style) -> String {
        style.format(unit * value)
    }
}
