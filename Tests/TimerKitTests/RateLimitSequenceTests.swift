import Foundation
import Testing
import TimerKit
import TimerKitTesting

struct Boom: Error {}

/// Marble tests for the AsyncSequence forms: each character is 100 ms on a virtual clock; in the
/// input a letter is an element, `|` the end and `#` a failure; in the output the same, as the
/// consumer saw them (several in one tick in parentheses). The consumer runs on the clock's
/// executor, so each step is exact after `await advance`.
enum AsyncMarbles {
    static func play(
        _ input: String, tail: Int = 6,
        _ limit: (AsyncThrowingStream<Character, any Error>, TimerClock) throws -> AsyncRateLimitSequence<AsyncThrowingStream<Character, any Error>>
    ) async throws -> String {
        let virtual = VirtualClock()
        let start = virtual.now
        let (elements, feed) = AsyncThrowingStream<Character, any Error>.makeStream()
        let limited = try limit(elements, virtual.clock)
        let seen = Recorder<(Character, TimerInstant)>()
        let consumer = Task(executorPreference: virtual.executor) {
            do {
                for try await element in limited { seen.append((element, virtual.now)) }
                seen.append(("|", virtual.now))
            } catch {
                seen.append(("#", virtual.now))
            }
        }
        let steps = Array(input)
        for index in 0..<(steps.count + tail) {
            await virtual.advance(to: start + Marbles.tick * index)
            guard index < steps.count else { continue }
            switch steps[index] {
            case "|": feed.finish()
            case "#": feed.finish(throwing: Boom())
            case let letter where letter.isLetter: feed.yield(letter)
            default: break
            }
            await virtual.advance(by: .zero)
        }
        consumer.cancel()
        await consumer.value
        var cells = Array(repeating: "-", count: steps.count + tail)
        for (value, instant) in seen.all {
            let index = Int((instant - start) / Marbles.tick)
            cells[index] = cells[index] == "-" ? String(value) : "(" + cells[index].trimmingCharacters(in: ["(", ")"]) + String(value) + ")"
        }
        return cells.joined()
    }
}

@Suite("Debounced and throttled AsyncSequences")
struct RateLimitSequenceTests {
    @Test("debounced: the latest element of each burst once it settled; the end passes through")
    func debounced() async throws {
        let out = try await AsyncMarbles.play("ab-c------d---|") { try $0.debounced(for: .milliseconds(300), clock: $1) }
        #expect(out == "------c------d|------")
    }

    @Test("debounced: an element waiting when the input ends is delivered, then the sequence ends — never dropped")
    func debouncedDeliversPendingOnEnd() async throws {
        let out = try await AsyncMarbles.play("ab|") { try $0.debounced(for: .milliseconds(300), clock: $1) }
        #expect(out == "--(b|)------")
    }

    @Test("debounced: an element waiting when the input fails is delivered, then the error is thrown")
    func debouncedDeliversPendingOnFailure() async throws {
        let out = try await AsyncMarbles.play("ab#") { try $0.debounced(for: .milliseconds(300), clock: $1) }
        #expect(out == "--(b#)------")
    }

    @Test(
        "debounced with leading and maxWait: under a steady stream each burst ends at maxWait with its latest element, and the next element opens a new burst at once"
    )
    func debouncedLeadingAndMaxWait() async throws {
        let out = try await AsyncMarbles.play("abcdefgh--|") {
            try $0.debounced(for: .milliseconds(300), leading: true, maxWait: .milliseconds(500), clock: $1)
        }
        // a opens a burst (leading); it ends at 500 ms with e; f, just after, opens the next one and
        // runs at once; g and h follow, and h ends that burst when the input ends.
        #expect(out == "a----(ef)----(h|)------")
    }

    @Test("throttled: the first element at once — not held back — then the latest of each window at its end")
    func throttled() async throws {
        let out = try await AsyncMarbles.play("abc-d--|") { try $0.throttled(for: .milliseconds(300), clock: $1) }
        #expect(out == "a--c--d|------")
    }

    @Test("throttled: an element waiting at the end of the input is delivered, then the sequence ends")
    func throttledDeliversPendingOnEnd() async throws {
        let out = try await AsyncMarbles.play("ab|") { try $0.throttled(for: .milliseconds(300), clock: $1) }
        #expect(out == "a-(b|)------")
    }

    @Test("throttled with latest: false and no trailing edge, as Combine and Rx name them")
    func throttledOptions() async throws {
        let first = try await AsyncMarbles.play("abc-d--|") { try $0.throttled(for: .milliseconds(300), latest: false, clock: $1) }
        #expect(first == "a--b--d|------")
        let leadingOnly = try await AsyncMarbles.play("abc-d--|") { try $0.throttled(for: .milliseconds(300), trailing: false, clock: $1) }
        #expect(leadingOnly == "a---d--|------")
    }

    @Test("C17: bad options fail when the sequence is made")
    func badOptions() {
        let (elements, _) = AsyncStream<Int>.makeStream()
        #expect(throws: TimerError.noDebounceEdge) { try elements.debounced(for: .seconds(1), leading: false, trailing: false) }
        #expect(throws: TimerError.nonPositiveInterval(.zero)) { try elements.throttled(for: .zero) }
    }

    @Test("C8: leaving the loop stops the input's task and drops a waiting element, leaving nothing pending")
    func cancellation() async throws {
        let virtual = VirtualClock()
        let (elements, feed) = AsyncStream<Int>.makeStream()
        let inputEnded = Flag()
        feed.onTermination = { _ in inputEnded.set() }
        let limited = try elements.debounced(for: .seconds(1), clock: virtual.clock)
        let consumer = Task(executorPreference: virtual.executor) {
            for try await _ in limited { Issue.record("no element should come") }
        }
        feed.yield(1)
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 1, "the burst's end")
        consumer.cancel()
        try await consumer.value
        await virtual.advance(by: .zero)
        #expect(inputEnded.isSet)
        #expect(virtual.pendingTimerCount == 0)
        await virtual.advance(by: .seconds(2))
    }
}
