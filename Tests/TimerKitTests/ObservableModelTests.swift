import Foundation
import Observation
import Testing
import TimerKitTesting

@testable import TimerKit

/// The `@Observable` models a view draws from, exactly on the virtual clock: advancing it on the
/// main actor delivers their ticks there and then.
@MainActor
@Suite("Observable models: the countdown and the stopwatch")
struct ObservableModelTests {
    @Test(
        "C2, C4: a 3 s countdown model shows 3, 2, 1, 0 at 0, 1, 2 and 3 s — never early, on the deadline's grid — with its text and progress, then finishes"
    )
    func countdown() throws {
        let virtual = VirtualClock()
        let model = CountdownModel(clock: virtual.clock)
        #expect(model.value == 0 && !model.isRunning && model.progress == 0)
        try model.start(for: .seconds(3))
        #expect(model.value == 3 && model.text == "0:03" && model.isRunning && model.total == .seconds(3) && model.progress == 0)
        virtual.advance(by: .milliseconds(999))
        #expect(model.value == 3, "not a nanosecond early")
        virtual.advance(by: .milliseconds(1))
        #expect(model.value == 2 && model.text == "0:02" && model.remaining == .seconds(2))
        #expect(abs(model.progress - 1.0 / 3) < 1e-9)
        virtual.advance(by: .seconds(2))
        #expect(model.value == 0 && model.text == "0:00" && model.isFinished && !model.isRunning && model.progress == 1)
    }

    @Test("A countdown model pauses to the nanosecond and resumes from there; while paused nothing changes")
    func countdownPause() throws {
        let virtual = VirtualClock()
        let model = CountdownModel(clock: virtual.clock)
        try model.start(for: .seconds(10))
        virtual.advance(by: .milliseconds(2_300))
        model.pause()
        #expect(model.isPaused && !model.isRunning && model.remaining == .milliseconds(7_700) && model.value == 8)
        virtual.advance(by: .seconds(60))
        #expect(model.remaining == .milliseconds(7_700) && model.value == 8, "frozen")
        model.resume()
        #expect(model.isRunning && !model.isPaused)
        virtual.advance(by: .milliseconds(700))
        #expect(model.value == 7, "7.0 s left: 700 ms after the resume")
        virtual.advance(by: .seconds(7))
        #expect(model.isFinished && model.value == 0)
    }

    @Test(
        "Observation: withObservationTracking sees each tick of a countdown model change what a view reads, and nothing while it is paused"
    )
    func countdownObservation() throws {
        let virtual = VirtualClock()
        let model = CountdownModel(clock: virtual.clock)
        try model.start(for: .seconds(5))
        let changes = Counter()
        func track() {
            withObservationTracking {
                _ = model.text
            } onChange: {
                changes.increment()
            }
        }
        track()
        virtual.advance(by: .seconds(1))
        #expect(changes.current == 1)
        track()
        model.pause()
        track()
        let afterPause = changes.current
        virtual.advance(by: .seconds(3))
        #expect(changes.current == afterPause, "a paused countdown changes nothing")
    }

    @Test("A countdown model started again replaces the countdown under way: the old one's ticks are gone; cancel stops it where it was")
    func countdownRestartAndCancel() throws {
        let virtual = VirtualClock()
        let model = CountdownModel(clock: virtual.clock)
        try model.start(for: .seconds(3))
        virtual.advance(by: .seconds(1))
        try model.start(for: .seconds(60))
        #expect(model.value == 60 && model.total == .seconds(60))
        virtual.advance(by: .seconds(2))
        #expect(model.value == 58 && !model.isFinished, "the first countdown's end did not reach the model")
        model.cancel()
        virtual.advance(by: .seconds(100))
        #expect(model.value == 58 && !model.isRunning && !model.isFinished)
        #expect(throws: TimerError.self) { try CountdownModel(unit: .zero, clock: virtual.clock).start(for: .seconds(1)) }
    }

    @Test("C11: releasing a countdown model cancels its countdown at once; no tick runs for a model that is gone", .checksLeaks)
    func countdownLifetime() throws {
        let virtual = VirtualClock()
        var model: CountdownModel? = CountdownModel(clock: virtual.clock)
        try model?.start(for: .seconds(30))
        let countdown = try #require(model?.current.withLock { $0 })
        let watched = watchForLeaks(model)
        model = nil
        #expect(watched.isReleased)
        #expect(countdown.isFinished, "cancelled by the model's deinit")
        #expect(virtual.advance(by: .seconds(60)) == 0, "no tick ran")
    }

    @Test("C2: a stopwatch model shows the elapsed time on its unit's grid, pauses exact to the nanosecond, continues, takes laps and resets")
    func stopwatch() throws {
        let virtual = VirtualClock()
        let model = StopwatchModel(unit: .milliseconds(10), clock: virtual.clock, locale: Locale(identifier: "en_US_POSIX"))
        #expect(model.text == "0:00.00" && !model.isRunning)
        try model.start()
        virtual.advance(by: .milliseconds(1_234))
        #expect(model.elapsed == .milliseconds(1_230) && model.text == "0:01.23")
        #expect(model.lap() == .milliseconds(1_234), "a lap reads the clock exactly")
        virtual.advance(by: .milliseconds(1_001))
        model.pause()
        #expect(model.elapsed == .milliseconds(2_235) && model.text == "0:02.23" && !model.isRunning)
        virtual.advance(by: .seconds(30))
        #expect(model.elapsed == .milliseconds(2_235), "paused")
        try model.start()
        virtual.advance(by: .milliseconds(5))
        #expect(model.elapsed == .milliseconds(2_240), "the grid of the elapsed time, not of the restart: 2.240 s came 5 ms after it")
        #expect(model.lap() == .milliseconds(1_006))
        #expect(model.laps == [.milliseconds(1_234), .milliseconds(1_006)])
        #expect(
            StopwatchModel.text(.milliseconds(3_602_240), unit: .milliseconds(10), locale: Locale(identifier: "en_US_POSIX")) == "1:00:02.24",
            "past an hour, hours first")
        model.reset()
        #expect(model.elapsed == .zero && model.laps.isEmpty && !model.isRunning && model.text == "0:00.00")
        #expect(virtual.advance(by: .seconds(10)) == 0, "no refresh after a reset")
    }

    @Test("C11: releasing a running stopwatch model stops its refresh timer", .checksLeaks)
    func stopwatchLifetime() throws {
        let virtual = VirtualClock()
        var model: StopwatchModel? = StopwatchModel(clock: virtual.clock)
        try model?.start()
        virtual.advance(by: .seconds(1))
        let watched = watchForLeaks(model)
        model = nil
        #expect(watched.isReleased)
        #expect(virtual.advance(by: .seconds(10)) == 0, "no refresh ran")
    }
}
