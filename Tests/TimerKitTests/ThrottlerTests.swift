import Testing
import TimerKit
import TimerKitTesting

/// Each marble character is 100 ms on a virtual clock (see `Marbles`); the interval is 300 ms.
@Suite("Throttler")
struct ThrottlerTests {
    static let interval = Duration.milliseconds(300)

    @Test("leading and trailing (the default): the first value at once, then the latest of each window at its end, never closer than the interval")
    func defaultEdges() throws {
        let out = try Marbles.play("abc-d------") { clock, run in try Throttler(interval: Self.interval, clock: clock, run) }
        #expect(out == "a--c--d--------------")
    }

    @Test("latest: false runs the first value sent during the window at its end, not the latest")
    func firstValue() throws {
        let out = try Marbles.play("abc-d------") { clock, run in
            try Throttler(interval: Self.interval, latest: false, clock: clock, run)
        }
        #expect(out == "a--b--d--------------")
    }

    @Test("leading only: the value that opens a window runs at once; the rest of the window is dropped")
    func leadingOnly() throws {
        let out = try Marbles.play("abc-d------") { clock, run in
            try Throttler(interval: Self.interval, trailing: false, clock: clock, run)
        }
        #expect(out == "a---d----------------")
    }

    @Test("trailing only: the latest value of each window runs at its end, the first one too")
    func trailingOnly() throws {
        let out = try Marbles.play("abc-d------") { clock, run in
            try Throttler(interval: Self.interval, leading: false, clock: clock, run)
        }
        #expect(out == "---c--d--------------")
    }

    @Test("A steady stream runs exactly once per interval, and the value waiting at the last window's end runs then — not when another arrives")
    func steadyStream() throws {
        let out = try Marbles.play("abcdefghij") { clock, run in try Throttler(interval: Self.interval, clock: clock, run) }
        #expect(out == "a--c--f--i--j-------")
    }

    @Test("flush runs the waiting value now and ends the window; cancel drops it (C8); isPending says which")
    func flushAndCancel() throws {
        let virtual = VirtualClock()
        let runs = Recorder<Character>()
        let throttler = try Throttler<Character>(interval: .seconds(1), clock: virtual.clock) { runs.append($0) }
        try throttler.send("a")
        try throttler.send("b")
        #expect(throttler.isPending)
        virtual.advance(by: .milliseconds(200))
        #expect(try throttler.flush())
        #expect(!throttler.isPending)
        virtual.advance(by: .zero)
        #expect(runs.all == ["a", "b"])
        try throttler.send("c")  // the window was ended: c opens a new one and runs at once
        try throttler.send("d")
        #expect(throttler.cancel())
        #expect(try !throttler.flush())
        virtual.advance(by: .seconds(5))
        #expect(runs.all == ["a", "b", "c"])
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C17: both edges off is refused with a clear error, as is a zero interval")
    func badInput() {
        #expect(throws: TimerError.noThrottleEdge) {
            try Throttler<Int>(interval: .seconds(1), leading: false, trailing: false) { _ in }
        }
        #expect(throws: TimerError.nonPositiveInterval(.zero)) {
            try Throttler<Int>(interval: .zero) { _ in }
        }
        #expect(TimerError.noThrottleEdge.description.contains("never runs"))
    }

    @Test("C12: a released throttler drops what it held and leaves nothing pending", .checksLeaks)
    func released() throws {
        let virtual = VirtualClock()
        let runs = Recorder<Int>()
        var throttler: Throttler<Int>? = try Throttler(interval: .seconds(1), clock: virtual.clock) { runs.append($0) }
        try throttler?.send(1)
        watchForLeaks(throttler)
        try throttler?.send(2)
        virtual.advance(by: .zero)
        throttler = nil
        #expect(virtual.pendingTimerCount == 0)
        virtual.advance(by: .seconds(2))
        #expect(runs.all == [1])
    }
}
