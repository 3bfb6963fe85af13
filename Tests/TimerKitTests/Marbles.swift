import Testing
import TimerKit
import TimerKitTesting

/// Marble tests: each character of a marble is one tick of 100 ms on a virtual clock; a letter is a
/// value sent (input) or the action run with it (output), `-` nothing.
struct Marbles {
    static let tick = Duration.milliseconds(100)

    /// Plays `input` into a debouncer made by `make` and returns what the action ran, as a marble
    /// as long as the input plus `tail` ticks (a run between ticks shows as `?`, several in one
    /// tick in parentheses).
    static func play(_ input: String, tail: Int = 10, _ make: (TimerClock, @escaping @Sendable (Character) -> Void) throws -> Debouncer<Character>) throws
        -> String
    {
        try play(input, tail: tail) { clock, run in try make(clock, run).send }
    }

    /// Plays `input` into a throttler made by `make`, as for a debouncer.
    static func play(_ input: String, tail: Int = 10, _ make: (TimerClock, @escaping @Sendable (Character) -> Void) throws -> Throttler<Character>) throws
        -> String
    {
        try play(input, tail: tail) { clock, run in try make(clock, run).send }
    }

    private static func play(
        _ input: String, tail: Int,
        sender make: (TimerClock, @escaping @Sendable (Character) -> Void) throws -> (Character) throws(TimerError) -> Void
    ) throws -> String {
        let virtual = VirtualClock()
        let start = virtual.now
        let runs = Recorder<(Character, TimerInstant)>()
        let send = try make(virtual.clock) { value in runs.append((value, virtual.now)) }
        let steps = Array(input)
        for index in 0..<(steps.count + tail) {
            virtual.advance(to: start + tick * index)
            if index < steps.count, steps[index].isLetter {
                try send(steps[index])
                virtual.advance(by: .zero)  // the leading edge runs through the engine
            }
        }
        var cells = Array(repeating: "-", count: steps.count + tail)
        for (value, instant) in runs.all {
            let offset = instant - start
            let index = Int(offset / tick)
            let cell = tick * index == offset ? String(value) : "?"
            cells[index] = cells[index] == "-" ? cell : "(" + cells[index].trimmingCharacters(in: ["(", ")"]) + cell + ")"
        }
        return cells.joined()
    }
}
