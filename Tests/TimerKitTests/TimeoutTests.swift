import Foundation
import Testing
import TimerKit
import TimerKitTesting

struct Unreachable: Error, Equatable {}

@Suite("Timeouts")
struct TimeoutTests {
    @Test("An operation past its limit is cancelled at the limit, and the error says how long the call waited")
    func timesOut() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let wasCancelled = Flag()
        let call = Task(executorPreference: virtual.executor) {
            try await withTimeout(.seconds(5), clock: clock) {
                do {
                    try await Task.sleep(for: .seconds(10), clock: clock)
                } catch {
                    wasCancelled.set()
                    throw error
                }
            }
        }
        // The operation's sleep and the timeout's: two entries.
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 2)
        await virtual.advance(by: .seconds(4))
        #expect(virtual.pendingTimerCount == 2)
        await virtual.advance(by: .seconds(1))
        await #expect {
            try await call.value
        } throws: { error in
            let timeout = try #require(error as? TimeoutError)
            return timeout.limit == .seconds(5) && timeout.waited == .seconds(5) && timeout.deadline == TimerInstant(kind: .virtual, nanoseconds: 5_000_000_000)
                && timeout.description == "timed out: the operation did not finish within 5s (waited 5s)"
        }
        #expect(wasCancelled.isSet)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("An operation that finishes in time returns its value, and the timeout leaves nothing pending")
    func finishesInTime() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let call = Task(executorPreference: virtual.executor) {
            try await withTimeout(.seconds(5), clock: clock) {
                try await Task.sleep(for: .seconds(2), clock: clock)
                return 42
            }
        }
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 2)
        await virtual.advance(by: .seconds(2))
        #expect(try await call.value == 42)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("The operation's own error is rethrown, not turned into a timeout")
    func operationErrorsPassThrough() async throws {
        let virtual = VirtualClock()
        await #expect(throws: Unreachable.self) {
            try await withTimeout(.seconds(5), clock: virtual.clock) { throw Unreachable() }
        }
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("The deadline form: several calls share one deadline; a deadline that has passed times out at once")
    func deadlineForm() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let deadline = clock.now + .seconds(3)
        let call = Task(executorPreference: virtual.executor) {
            try await withDeadline(deadline, clock: clock) {
                try await Task.sleep(for: .seconds(60), clock: clock)
            }
        }
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 2)
        await virtual.advance(by: .seconds(3))
        await #expect {
            try await call.value
        } throws: { error in
            let timeout = try #require(error as? TimeoutError)
            return timeout.limit == nil && timeout.deadline == deadline && timeout.waited == .seconds(3)
        }
        // Now past: a new call with the same deadline times out without waiting.
        await #expect(throws: TimeoutError.self) {
            try await withDeadline(deadline, clock: clock) { try await Task.sleep(for: .seconds(60), clock: clock) }
        }
        await #expect(throws: TimerError.clockMismatch(expected: .virtual, got: .continuous)) {
            try await withDeadline(TimerClock.continuous.now, clock: clock) { 1 }
        }
    }

    @Test("Cancelling the caller cancels the operation and the call throws CancellationError")
    func callerCancelled() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let call = Task(executorPreference: virtual.executor) {
            try await withTimeout(.seconds(5), clock: clock) { try await Task.sleep(for: .seconds(60), clock: clock) }
        }
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 2)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(virtual.pendingTimerCount == 0)
    }
}

extension RealTime {
    @Suite("Timeouts in real time")
    struct TimeoutRealTimeTests {
        @Test("C2: a timeout on a system clock never comes before its limit")
        func neverEarly() async throws {
            let clock = TimerClock.continuous
            let start = clock.now
            await #expect(throws: TimeoutError.self) {
                try await withTimeout(.milliseconds(50), clock: clock) { try await Task.sleep(for: .seconds(30)) }
            }
            #expect(clock.now - start >= .milliseconds(50))
        }
    }
}
