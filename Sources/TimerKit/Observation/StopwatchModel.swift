import Foundation
import Observation

/// A stopwatch for a view: elapsed time, laps, start, pause and reset — an `@Observable` model on
/// the main actor that SwiftUI redraws from.
///
/// ```swift
/// struct WorkoutTimer: View {
///     @State private var stopwatch = StopwatchModel(unit: .milliseconds(10))
///
///     var body: some View {
///         Text(stopwatch.text).monospacedDigit()
///         Button(stopwatch.isRunning ? "Pause" : "Start") {
///             stopwatch.isRunning ? stopwatch.pause() : stopwatch.start()
///         }
///     }
/// }
/// ```
///
/// The elapsed time is read from the clock — the time run so far plus `now − start` — never a
/// count of ticks: a busy main thread or a late redraw shows the right time at its next change.
/// ``elapsed`` and ``text`` change each time the elapsed time passes a multiple of ``unit`` (a
/// hundredth of a second for `unit: .milliseconds(10)`), on the grid of the elapsed time itself;
/// ``pause()`` and ``lap()`` read the clock exactly.
///
/// The model owns its refresh timer, and the timer holds the model weakly (C11): releasing the
/// model stops it; there is nothing to invalidate by hand.
@MainActor
@Observable
public final class StopwatchModel {
    /// The time run, as last shown: a multiple of ``unit`` while running; exact when paused.
    public private(set) var elapsed: Duration = .zero

    /// Whether it is running.
    public private(set) var isRunning = false

    /// The laps taken, in order: each one's length (the time from the previous lap, or the start).
    public private(set) var laps: [Duration] = []

    /// ``elapsed`` as people read it: `1:05.27` (minutes, seconds and as many decimals as the
    /// unit has), hours first past an hour.
    public private(set) var text: String

    /// How often ``elapsed`` and ``text`` change while running: the resolution shown.
    public let unit: Duration

    /// The clock it runs on (C1).
    public let clock: TimerClock

    /// The locale ``text`` is written for (its decimal separator).
    public let locale: Locale

    private let unitNanoseconds: Int64
    /// The time run before the current start, in nanoseconds.
    @ObservationIgnored private var accumulated: Int64 = 0
    /// When the current run started, on the clock; `nil` while paused.
    @ObservationIgnored private var startedAt: Int64?
    /// The refresh timer of the current run (behind a lock: the model's `deinit` stops it, off
    /// the main actor).
    private let refresh = Locked<ScheduledTimer?>(nil)

    /// A stopwatch at zero.
    ///
    /// - Parameters:
    ///   - unit: The resolution shown; a tenth of a second by default. Less than a millisecond is
    ///     raised to a millisecond (a display cannot show more), and more than zero is required.
    ///   - clock: The clock (C1); continuous by default: the time passes while the device sleeps.
    ///   - locale: The locale ``text`` is written for; the user's by default.
    /// - Precondition: `unit` is more than zero.
    public init(unit: Duration = .milliseconds(100), clock: TimerClock = .continuous, locale: Locale = .autoupdatingCurrent) {
        precondition(unit > .zero, "a stopwatch's unit must be more than zero")
        let unit = max(unit, .milliseconds(1))
        self.unit = unit
        self.unitNanoseconds = unit.saturatingNanoseconds
        self.clock = clock
        self.locale = locale
        self.text = Self.text(.zero, unit: unit, locale: locale)
    }

    deinit {
        refresh.withLock { $0 }?.invalidate()
    }

    // MARK: Controlling

    /// Starts it, or continues it from where it was paused. Does nothing while it runs.
    ///
    /// - Throws: ``TimerError/clockShutDown`` if the clock was shut down.
    public func start() throws(TimerError) {
        guard !isRunning else { return }
        let now = clock.nanosecondsNow
        // The next multiple of the unit, from this start on.
        let next = now.addingSaturating(unitNanoseconds - accumulated % unitNanoseconds)
        let timer = try ScheduledTimer.make(
            interval: unit, first: .at(TimerInstant(kind: clock.kind, nanoseconds: next)), tolerance: .zero, clock: clock,
            policy: .coalesce, delivery: .queue(.main),
            handler: TimerHandler<ScheduledTimer, TimerFire>.onMainActor(bound: self) { model, timer, _ in
                model.tick(timer)
            }.closure(endingWith: { $0.invalidate() }))
        refresh.withLock { $0 }?.invalidate()
        refresh.withLock { $0 = timer }
        startedAt = now
        isRunning = true
    }

    /// Stops it, keeping the time run (exact to the nanosecond of the clock). Does nothing while
    /// it is paused.
    public func pause() {
        guard isRunning, let startedAt else { return }
        stopRefresh()
        accumulated = accumulated.addingSaturating(startedAt.duration(to: clock.nanosecondsNow))
        self.startedAt = nil
        isRunning = false
        show(accumulated, exact: true)
    }

    /// Records a lap: the time since the previous lap (or the start), read from the clock now.
    /// Does nothing at zero.
    @discardableResult
    public func lap() -> Duration? {
        let total = exactElapsed
        guard total > 0 else { return nil }
        let length = Duration.nanoseconds(total) - laps.reduce(.zero, +)
        laps.append(length)
        return length
    }

    /// Back to zero, stopped, without laps.
    public func reset() {
        stopRefresh()
        accumulated = 0
        startedAt = nil
        isRunning = false
        laps = []
        show(0, exact: true)
    }

    // MARK: Showing

    /// The time run now, exact.
    private var exactElapsed: Int64 {
        guard let startedAt else { return accumulated }
        return accumulated.addingSaturating(startedAt.duration(to: clock.nanosecondsNow))
    }

    /// A refresh of the current run: the elapsed time, on the unit's grid.
    private func tick(_ timer: ScheduledTimer) {
        guard refresh.withLock({ $0 === timer }) else { return }
        show(exactElapsed, exact: false)
    }

    private func show(_ nanoseconds: Int64, exact: Bool) {
        let shown = exact ? nanoseconds : nanoseconds / unitNanoseconds * unitNanoseconds
        if elapsed != .nanoseconds(shown) { elapsed = .nanoseconds(shown) }
        let text = Self.text(.nanoseconds(nanoseconds / unitNanoseconds * unitNanoseconds), unit: unit, locale: locale)
        if self.text != text { self.text = text }
    }

    private func stopRefresh() {
        refresh.withLock { timer in
            defer { timer = nil }
            return timer
        }?.invalidate()
    }

    /// `1:05.27`: minutes and seconds with a decimal per power of ten the unit is below a second.
    static func text(_ elapsed: Duration, unit: Duration, locale: Locale) -> String {
        var decimals = 0
        var step = Duration.seconds(1)
        while unit < step, decimals < 3 {
            step /= 10
            decimals += 1
        }
        let pattern: Duration.TimeFormatStyle.Pattern =
            elapsed >= .seconds(3_600)
            ? .hourMinuteSecond(padHourToLength: 1, fractionalSecondsLength: decimals)
            : .minuteSecond(padMinuteToLength: 1, fractionalSecondsLength: decimals)
        return elapsed.formatted(.time(pattern: pattern).locale(locale))
    }
}
