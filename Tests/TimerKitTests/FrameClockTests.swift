import Foundation
import Testing
import TimerKit
import TimerKitTesting

/// The frame clock and the fixed timestep, exactly, on the virtual clock.
@Suite("Frame clock")
struct FrameClockTests {
    func frames(_ fps: Int = 60) throws -> (VirtualClock, FrameClock, Recorder<FrameClock.Frame>) {
        let virtual = VirtualClock()
        let frames = Recorder<FrameClock.Frame>()
        let clock = try FrameClock.start(framesPerSecond: fps, clock: virtual.clock) { _, frame in frames.append(frame) }
        return (virtual, clock, frames)
    }

    @Test("Frames tick on a fixed grid, each with its timestamp, its target and its index")
    func framesOnTheGrid() throws {
        let (virtual, clock, frames) = try frames(50)
        virtual.advance(by: .milliseconds(100))
        #expect(clock.frameDuration == .milliseconds(20))
        #expect(frames.all.map(\.index) == [1, 2, 3, 4, 5])
        for frame in frames.all {
            #expect(frame.timestamp == TimerInstant(kind: .virtual, nanoseconds: frame.index * 20_000_000))
            #expect(frame.targetTimestamp == frame.timestamp + .milliseconds(20))
            #expect(frame.droppedSinceLast == 0 && frame.elapsed == .milliseconds(20))
            #expect(frame.deliveredAt == frame.timestamp)
        }
    }

    @Test("A stall drops frames: the next tick counts them and its elapsed time covers them, with no burst")
    func droppedFrames() throws {
        let (virtual, _, frames) = try frames(50)
        virtual.advance(by: .milliseconds(40))
        virtual.jump(by: .milliseconds(110))  // frames 3…7 come while nothing can run
        #expect(frames.all.map(\.index) == [1, 2, 7])
        let late = try #require(frames.all.last)
        #expect(late.droppedSinceLast == 4)
        #expect(late.elapsed == .milliseconds(100))
        #expect(late.timestamp == TimerInstant(kind: .virtual, nanoseconds: 140_000_000))
        #expect(late.deliveredAt == TimerInstant(kind: .virtual, nanoseconds: 150_000_000))
        virtual.advance(by: .milliseconds(10))
        #expect(frames.all.last?.droppedSinceLast == 0)
    }

    @Test("isPaused stops the ticks; resuming continues on the grid and counts no frame dropped for the pause")
    func pause() throws {
        let (virtual, clock, frames) = try frames(50)
        virtual.advance(by: .milliseconds(40))
        clock.isPaused = true
        clock.isPaused = true
        virtual.advance(by: .seconds(1))
        #expect(frames.count == 2 && clock.isPaused)
        clock.isPaused = false
        virtual.advance(by: .milliseconds(20))
        let resumed = try #require(frames.all.last)
        #expect(resumed.index == 53 && resumed.droppedSinceLast == 0 && resumed.elapsed == .milliseconds(20))
        #expect(resumed.timestamp == TimerInstant(kind: .virtual, nanoseconds: 1_060_000_000))
    }

    @Test("C11: a frame clock holds its owner weakly and ends once the owner is gone — the CADisplayLink cycle cannot happen", .checksLeaks)
    func ownerIsWeak() throws {
        final class View: Sendable {
            let frames = Counter()
        }
        let virtual = VirtualClock()
        var view: View? = View()
        let watchedView: WatchedObject
        watchedView = watchForLeaks(view)
        let clock = try FrameClock.start(
            framesPerSecond: 60, clock: virtual.clock,
            .bound(to: view!) { view, _, _ in
                view.frames.increment()
            })
        virtual.advance(by: .milliseconds(101))  // frame 6 is at 100.000002 ms
        #expect(view?.frames.current == 6)
        view = nil
        #expect(watchedView.isReleased)
        virtual.advance(by: .milliseconds(20))
        #expect(!clock.isValid)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("invalidate() stops the frames; bad frame rates are refused")
    func invalidateAndBadInput() throws {
        let (virtual, clock, frames) = try frames()
        virtual.advance(by: .milliseconds(51))
        clock.invalidate()
        virtual.advance(by: .seconds(1))
        #expect(frames.count == 3 && !clock.isValid)
        #expect(throws: TimerError.invalidFrameRate(0)) { try FrameClock.start(framesPerSecond: 0) { _, _ in } }
    }

    @Test("A fixed timestep steps in whole steps, carries the leftover over, and caps the catch-up")
    func fixedTimestep() {
        var physics = FixedTimestep(step: .milliseconds(10), maxStepsPerFrame: 4)
        // 60 Hz frames, 100 Hz steps: 1 or 2 steps a frame, 100 steps in a second, no drift.
        var steps = 0
        for _ in 0..<60 { steps += physics.advance(by: .nanoseconds(16_666_667)).count }
        #expect(steps == 100)
        let frame = physics.advance(by: .milliseconds(15))
        #expect(frame.count == 1 || frame.count == 2)
        #expect(frame.alpha >= 0 && frame.alpha < 1 && frame.dropped == .zero)
        // A 1 s stall: 4 steps, the rest dropped, less than a step carried over.
        var stalled = FixedTimestep(step: .milliseconds(10), maxStepsPerFrame: 4)
        let catchUp = stalled.advance(by: .milliseconds(1_005))
        #expect(catchUp.count == 4)
        #expect(catchUp.dropped == .milliseconds(960))
        #expect(stalled.accumulated == .milliseconds(5) && catchUp.alpha == 0.5)
    }
}

extension RealTime {
    @Suite("Frame clock in real time")
    struct FrameClockRealTimeTests {
        @Test("A frame clock in real time ticks on its grid, never early, and its frames add up")
        func frameClockSmoke() async throws {
            let frames = Recorder<FrameClock.Frame>()
            let clock = try FrameClock.start(framesPerSecond: 100) { _, frame in frames.append(frame) }
            #expect(await eventually { frames.count >= 10 })
            clock.invalidate()
            let all = frames.all
            #expect(all.allSatisfy { $0.deliveredAt >= $0.timestamp }, "C2")
            for (previous, frame) in zip(all, all.dropFirst()) {
                #expect(frame.index == previous.index + 1 + Int64(frame.droppedSinceLast), "every frame is delivered or counted as dropped")
            }
        }
    }
}
