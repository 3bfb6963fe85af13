// A hook the benchmark harness races the engine's store layouts through. Not API.

extension TimerClock {
    /// Creates a dedicated clock whose engine keeps every pending deadline in its heap, with the
    /// timing wheel turned off: the layout the benchmark races against the default.
    @_spi(Benchmarks)
    public static func _dedicatedHeapOnly(_ kind: Kind) -> TimerClock {
        precondition(kind != .virtual, "TimerClock._dedicatedHeapOnly(.virtual): not a system clock")
        return TimerClock(engine: TimerEngine(kind: kind, isShared: false, layout: .heap))
    }
}
