import Dispatch
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit stopwatch`: elapsed time is always a sum of clock readings (never a count of ticks, so
/// it cannot drift), redrawn by a repeating timer on the continuous clock: every 100 ms on a
/// terminal, every second into a pipe.
final class StopwatchRun: Sendable {
    /// The stopwatch's state: time counted before the last resume, and when it resumed (nil while
    /// paused), in nanoseconds on the continuous clock.
    struct Watch: Sendable, Equatable {
        var counted: Int64 = 0
        var resumedAt: Int64?
        var laps: [Int64] = []

        init(startedAt now: Int64) { resumedAt = now }

        func elapsed(at now: Int64) -> Int64 { counted + (resumedAt.map { now - $0 } ?? 0) }

        var isPaused: Bool { resumedAt == nil }

        mutating func toggle(at now: Int64) {
            if let resumedAt {
                counted += now - resumedAt
                self.resumedAt = nil
            } else {
                resumedAt = now
            }
        }

        /// Takes a lap: returns its number, its own time and the total.
        mutating func lap(at now: Int64) -> (number: Int, lap: Int64, total: Int64) {
            let total = elapsed(at: now)
            let lap = total - (laps.last ?? 0)
            laps.append(total)
            return (laps.count, lap, total)
        }
    }

    private let clock = TimerClock.continuous
    private let label: String?
    private let color = Terminal.usesColor
    private let session = LiveSession(label: "timerkit.stopwatch")
    private var interactive: Bool { session.interactive }
    private var queue: DispatchQueue { session.queue }
    private let watch: Locked<Watch>

    init(label: String?) {
        self.label = label
        watch = Locked(Watch(startedAt: TimerClock.continuous.now.nanoseconds))
    }

    /// Runs until `q` (0) or a signal (128 + its number); prints the total.
    func run() throws -> Int32 {
        SignalRelay.install(catchingSuspension: interactive) { [self] signal in
            if signal == SIGTSTP { session.suspend { [self] in draw() } } else { session.end(128 + signal) }
        }
        session.begin()
        let redraw = try ScheduledTimer.repeating(
            every: interactive ? .milliseconds(100) : .seconds(1), first: interactive ? .now : .after(.seconds(1)),
            tolerance: interactive ? .milliseconds(10) : .zero, clock: clock, delivery: .queue(queue)
        ) { [self] _, fire in draw(at: fire.scheduledDeadline.nanoseconds) }
        session.readKeys { [self] key in self.key(key) }
        let status = session.waitForEnd(clearingLine: true) { redraw.invalidate() }
        let state = watch.withLock { $0 }
        let (total, laps) = (state.elapsed(at: clock.now.nanoseconds), state.laps.count)
        let lapsText = laps == 0 ? "" : ", \(laps) lap\(laps == 1 ? "" : "s")"
        Output.line("total \(Self.format(total, tenths: false))\(lapsText)\(label.map { "  \($0)" } ?? "")")
        return status
    }

    /// The current time: redrawn in place on a terminal; otherwise a plain line with the whole
    /// seconds at `deadline` (the redraw's grid deadline, so the line reads 0:01, 0:02, … exactly).
    private func draw(at deadline: Int64? = nil) {
        guard !session.hasEnded else { return }
        let state = watch.withLock { $0 }
        guard interactive else {
            let seconds = state.elapsed(at: deadline ?? clock.now.nanoseconds) / 1_000_000_000 * 1_000_000_000
            return Output.line([String(Self.format(seconds, tenths: true).dropLast(2)), label].compactMap { $0 }.joined(separator: "  "))
        }
        let elapsed = state.elapsed(at: clock.now.nanoseconds)
        let hint = state.isPaused ? "paused · p resume · l lap · q stop" : "p pause · l lap · q stop"
        var line = Self.format(elapsed, tenths: true) + (label.map { "  \($0)" } ?? "")
        line += "   " + (color ? Terminal.Escape.dim + hint + Terminal.Escape.reset : hint)
        Output.raw(Terminal.Escape.clearLine + line)
    }

    /// `p`/space pauses and resumes, `l`/Enter takes a lap, `q` stops.
    private func key(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "p"), UInt8(ascii: "P"), UInt8(ascii: " "):
            watch.withLock { $0.toggle(at: clock.now.nanoseconds) }
            queue.async { [self] in draw() }
        case UInt8(ascii: "l"), UInt8(ascii: "L"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
            let (number, lap, total) = watch.withLock { $0.lap(at: clock.now.nanoseconds) }
            queue.async { [self] in
                Output.raw(Terminal.Escape.clearLine + "lap \(number)  \(Self.format(lap, tenths: false))  total \(Self.format(total, tenths: false))\n")
                draw()
            }
        case UInt8(ascii: "q"), UInt8(ascii: "Q"):
            session.end(0)
        default:
            break
        }
    }

    /// `0:07.3`, `12:07.3`, `1:02:07.3` (tenths truncated: a stopwatch never shows time not yet
    /// elapsed); with `tenths: false`, hundredths: `0:07.31`.
    static func format(_ nanoseconds: Int64, tenths: Bool) -> String {
        let value = max(0, nanoseconds)
        let fractionDigits = tenths ? 1 : 2
        let fractionUnit: Int64 = tenths ? 100_000_000 : 10_000_000
        let fraction = String(value % 1_000_000_000 / fractionUnit)
        let seconds = value / 1_000_000_000
        let (hours, minutes, secs) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        func two(_ number: Int64) -> String { number < 10 ? "0\(number)" : "\(number)" }
        let clock = hours > 0 ? "\(hours):\(two(minutes)):\(two(secs))" : "\(minutes):\(two(secs))"
        return clock + "." + String(repeating: "0", count: fractionDigits - fraction.count) + fraction
    }
}
