import Foundation
import Testing
import TimerKit

/// Runs `body` on a new thread of its own and returns once it has returned (never blocking a
/// thread of the cooperative pool).
func onNewThread(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread {
            body()
            continuation.resume()
        }.start()
    }
}

extension RealTime {
    /// A system clock keeps its callbacks in per-core shards, each thread in its own (issue 11);
    /// what a callback promises must not depend on which shard holds it.
    @Suite("Callback shards")
    struct ShardTests {
        @Test("C13: a callback scheduled on one thread is cancelled from another, and never runs")
        func cancelFromAnotherThread() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let ran = Flag()
            let handle = Recorder<ScheduledCallback>()
            await onNewThread {
                handle.append(try! clock.schedule(at: .after(.milliseconds(30))) { ran.set() })
            }
            let callback = try #require(handle.all.first)
            let cancelled = Recorder<Bool>()
            await onNewThread { cancelled.append(callback.cancel()) }
            #expect(cancelled.all == [true])
            #expect(!callback.isPending)
            try await Task.sleep(for: .milliseconds(80))
            #expect(!ran.isSet)
            #expect(clock.pendingTimerCount == 0)
        }

        @Test("C16: callbacks scheduled from several threads are all counted, all fire, and none is early")
        func manyThreads() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let fired = Counter()
            let early = Counter()
            let deadline = clock.now + .milliseconds(100)
            for _ in 0..<4 {
                await onNewThread {
                    for _ in 0..<250 {
                        try! clock.schedule(at: .at(deadline)) {
                            if clock.now < deadline { _ = early.increment() }
                            _ = fired.increment()
                        }
                    }
                }
            }
            #expect(clock.pendingTimerCount == 1_000)
            #expect(await eventually { fired.current == 1_000 })
            #expect(early.current == 0)
            #expect(clock.pendingTimerCount == 0)
        }

        @Test("C4: callbacks of two threads that come due at one wake-up run in deadline order")
        func mergedInDeadlineOrder() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let order = Recorder<Int>()
            let base = clock.now + .milliseconds(60)
            // Thread A holds the odd deadlines, thread B the even ones; a tolerance that covers them
            // all lets the engine serve them with one wake-up, so they come out of two shards at once.
            for parity in 0..<2 {
                await onNewThread {
                    for step in stride(from: parity, to: 8, by: 2) {
                        try! clock.schedule(at: .at(base + .milliseconds(step)), tolerance: .milliseconds(40)) { order.append(step) }
                    }
                }
            }
            #expect(await eventually { order.count == 8 })
            #expect(order.all == Array(0..<8))
        }
    }
}
