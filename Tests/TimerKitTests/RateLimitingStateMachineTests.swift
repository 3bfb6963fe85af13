import Testing

@testable import TimerKit

/// The debouncer's and the throttler's decisions on their own: plain integers for instants, no
/// clock, no timers.
@Suite("Rate-limiting state machines")
struct RateLimitingStateMachineTests {
    @Test("A debounce burst ends at the last value plus the delay, at most maxWait after it began; only the newest edge timer counts, older ones are stale")
    func debounceEdges() {
        var machine = DebounceStateMachine<String>(delay: 300, maxWait: 1_000, leading: false, trailing: true)
        let first = machine.send("s", at: 0)
        #expect(first.runNow == nil)
        #expect(first.edgeDeadline == 300)
        let second = machine.send("sw", at: 200)
        #expect(second.edgeDeadline == 500)
        let third = machine.send("swift", at: 900)
        #expect(third.edgeDeadline == 1_000, "maxWait bounds the burst")
        guard case .stale = machine.edgeTimerExpired(first.generation) else { return #expect(Bool(false), "an older timer is stale") }
        guard case .run(let value) = machine.edgeTimerExpired(third.generation) else { return #expect(Bool(false), "the newest timer ends the burst") }
        #expect(value == "swift")
        #expect(machine.pending == nil)
        // The next value starts a new burst.
        #expect(machine.send("x", at: 2_000).edgeDeadline == 2_300)
    }

    @Test(
        "C8: with leading, a debounce burst's first value runs at once and the end is quiet unless more came; a flush takes the pending value and makes the timer stale"
    )
    func debounceLeadingAndFlush() {
        var machine = DebounceStateMachine<Int>(delay: 100, maxWait: nil, leading: true, trailing: true)
        let sent = machine.send(1, at: 0)
        #expect(sent.runNow == 1)
        guard case .quiet = machine.edgeTimerExpired(sent.generation) else { return #expect(Bool(false)) }
        let again = machine.send(2, at: 500)
        #expect(again.runNow == 2)
        _ = machine.send(3, at: 550)
        #expect(machine.endBurst() == 3)
        guard case .stale = machine.edgeTimerExpired(again.generation) else { return #expect(Bool(false)) }
    }

    @Test(
        "C8: a throttle window runs its opening value at once and the latest (or first) one at its end, which opens the next window; a closed window's timer is stale"
    )
    func throttleWindows() {
        for latest in [true, false] {
            var machine = ThrottleStateMachine<Int>(leading: true, trailing: true, latest: latest)
            let opened = machine.send(1)
            #expect(opened.runNow == 1)
            let window = try! #require(opened.openedWindow)
            #expect(machine.send(2).openedWindow == nil)
            _ = machine.send(3)
            guard case .run(let value, let next) = machine.edgeTimerExpired(window) else { return #expect(Bool(false)) }
            #expect(value == (latest ? 3 : 2))
            guard case .idle = machine.edgeTimerExpired(next) else { return #expect(Bool(false), "nothing waited in the second window") }
            let reopened = machine.send(4)
            #expect(reopened.runNow == 4)
            _ = machine.send(5)
            #expect(machine.closeWindow() == 5)
            guard case .stale = machine.edgeTimerExpired(reopened.openedWindow!) else { return #expect(Bool(false)) }
        }
    }
}
