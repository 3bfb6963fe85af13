import Testing
import TimerKit
import TimerKitTesting

@Suite("Debouncer")
struct DebouncerTests {
    @Test("trailing (the default): the latest value of a burst runs once the values settled for the delay")
    func trailing() throws {
        let out = try Marbles.play("ab-c------d---") { clock, run in try Debouncer(delay: .milliseconds(300), clock: clock, run) }
        #expect(out == "------c------d----------")
    }

    @Test("leading: the first value of a burst runs at once; the rest of the burst is dropped")
    func leading() throws {
        let out = try Marbles.play("ab-c-----d----") { clock, run in
            try Debouncer(delay: .milliseconds(300), leading: true, trailing: false, clock: clock, run)
        }
        #expect(out == "a--------d--------------")
    }

    @Test("leading and trailing: the first value at once, the latest at the end, and a lone value only once")
    func bothEdges() throws {
        let burst = try Marbles.play("ab-c------") { clock, run in
            try Debouncer(delay: .milliseconds(300), leading: true, clock: clock, run)
        }
        #expect(burst == "a-----c-------------")
        let lone = try Marbles.play("a-----") { clock, run in try Debouncer(delay: .milliseconds(300), leading: true, clock: clock, run) }
        #expect(lone == "a---------------")
    }

    @Test("maxWait: under a steady stream the latest value still runs at least every maxWait")
    func maxWait() throws {
        let out = try Marbles.play("abcdefgh--") { clock, run in
            try Debouncer(delay: .milliseconds(300), maxWait: .milliseconds(500), clock: clock, run)
        }
        // A burst from a: ends at 500 ms with e; f starts the next, which ends at 1000 ms with h.
        #expect(out == "-----e----h---------")
    }

    @Test("flush runs the pending value now and ends the burst; cancel drops it (C8); isPending says which")
    func flushAndCancel() throws {
        let virtual = VirtualClock()
        let runs = Recorder<(Character, TimerInstant)>()
        let debouncer = try Debouncer<Character>(delay: .seconds(1), clock: virtual.clock) { runs.append(($0, virtual.now)) }
        try debouncer.send("a")
        #expect(debouncer.isPending)
        virtual.advance(by: .milliseconds(200))
        #expect(try debouncer.flush())
        #expect(!debouncer.isPending)
        virtual.advance(by: .zero)
        try debouncer.send("b")
        #expect(debouncer.cancel())
        #expect(try !debouncer.flush())
        virtual.advance(by: .seconds(5))
        #expect(runs.all.map(\.0) == ["a"])
        #expect(runs.all.map(\.1) == [virtual.now - .seconds(5)])
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C17: both edges off is refused with a clear error, as is a negative delay")
    func badInput() {
        #expect(throws: TimerError.noDebounceEdge) {
            try Debouncer<Int>(delay: .seconds(1), leading: false, trailing: false) { _ in }
        }
        #expect(throws: TimerError.negativeTolerance(.seconds(-1))) {
            try Debouncer<Int>(delay: .seconds(-1)) { _ in }
        }
    }

    @Test("C12: a released debouncer drops what it held and leaves nothing pending", .checksLeaks)
    func released() throws {
        let virtual = VirtualClock()
        let runs = Recorder<Int>()
        var debouncer: Debouncer<Int>? = try Debouncer(delay: .seconds(1), clock: virtual.clock) { runs.append($0) }
        try debouncer?.send(1)
        watchForLeaks(debouncer)
        #expect(virtual.pendingTimerCount == 1)
        debouncer = nil
        #expect(virtual.pendingTimerCount == 0)
        virtual.advance(by: .seconds(2))
        #expect(runs.all.isEmpty)
    }
}
