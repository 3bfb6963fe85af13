import Foundation
import Synchronization
import Testing
import TimerKit

/// C8, C13 and C14 in real time, with many threads.
extension RealTime {
    @Suite("Concurrency")
    struct ConcurrencyTests {
        @Test("C13, C14: eight threads calling every method on shared timers cause no crash, no overlapping runs and no fire after invalidate")
        func hammeringSharedTimers() async throws {
            let overlaps = Counter()
            let runs = Counter()
            let concurrent = DispatchQueue(label: "hammer", attributes: .concurrent)
            let timers: [ScheduledTimer] = try (0..<4).map { index in
                let inFlight = Counter()
                let delivery: TimerDelivery = index % 2 == 0 ? .queue(concurrent) : .engineThread
                return try ScheduledTimer.repeating(every: .milliseconds(1 + index), tolerance: .microseconds(100 * index), delivery: delivery) { _, _ in
                    if inFlight.increment() > 1 { overlaps.increment() }
                    runs.increment()
                    inFlight.decrement()
                }
            }
            let deadline = Date().addingTimeInterval(2)
            let threadsDone = DispatchGroup()
            let operationCounts = Recorder<Int>()
            for _ in 0..<8 {
                threadsDone.enter()
                Thread {
                    defer { threadsDone.leave() }
                    var generator = SystemRandomNumberGenerator()
                    var operations = 0
                    while Date() < deadline {
                        let timer = timers[Int.random(in: 0..<timers.count, using: &generator)]
                        switch Int.random(in: 0..<6, using: &generator) {
                        case 0: timer.fire()
                        case 1: timer.suspend()
                        case 2: timer.resume()
                        case 3: try? timer.reschedule(at: .after(.microseconds(Int64.random(in: 0...2_000, using: &generator))))
                        case 4: _ = (timer.isValid, timer.nextDeadline, timer.fireCount, timer.isSuspended)
                        default: try? timer.reschedule(at: .now, every: .microseconds(Int64.random(in: 500...3_000, using: &generator)))
                        }
                        operations += 1
                    }
                    operationCounts.append(operations)
                }.start()
            }
            await withCheckedContinuation { done in threadsDone.notify(queue: .global()) { done.resume() } }
            #expect(operationCounts.all.count == 8)
            #expect(operationCounts.all.allSatisfy { $0 > 0 })
            for timer in timers { timer.resume() }
            #expect(await eventually { runs.current > 100 })
            for timer in timers { timer.invalidate() }
            let countsAtInvalidate = timers.map(\.fireCount)
            try await Task.sleep(for: .milliseconds(200))
            #expect(timers.map(\.fireCount) == countsAtInvalidate, "no run starts once invalidate() has returned")
            #expect(timers.allSatisfy { !$0.isValid })
            #expect(overlaps.current == 0)
        }

        @Test("C8: invalidate() from another thread while the handler runs returns without waiting, and no run follows")
        func invalidateWhileRunning() async throws {
            let started = Counter()
            let finished = Counter()
            let release = DispatchSemaphore(value: 0)
            // Handlers that block belong on a queue of their own, never on a global queue: on Linux the
            // global queues share their few threads with Swift concurrency.
            let timer = try ScheduledTimer.repeating(every: .milliseconds(5), delivery: .queue(DispatchQueue(label: "blocking"))) { _, _ in
                started.increment()
                release.wait()
                finished.increment()
            }
            #expect(await eventually { started.current == 1 })
            timer.invalidate()  // returns while the run is under way
            #expect(finished.current == 0)
            release.signal()
            #expect(await eventually { finished.current == 1 })
            try await Task.sleep(for: .milliseconds(50))
            #expect(started.current == 1)
        }

        @Test("C14: runs of one timer never overlap on a concurrent queue, even when the handler is slower than the interval")
        func slowHandlerOnConcurrentQueue() async throws {
            let inFlight = Counter()
            let overlaps = Counter()
            let fires = Recorder<TimerFire>()
            let concurrent = DispatchQueue(label: "slow", attributes: .concurrent)
            let timer = try ScheduledTimer.repeating(every: .milliseconds(2), delivery: .queue(concurrent)) { _, fire in
                if inFlight.increment() > 1 { overlaps.increment() }
                fires.append(fire)
                Thread.sleep(forTimeInterval: 0.007)
                inFlight.decrement()
            }
            #expect(await eventually { fires.count >= 10 })
            timer.invalidate()
            #expect(overlaps.current == 0)
            // C5 in real time: the slow handler misses deadlines, and coalesced fires say how many.
            #expect(fires.all.dropFirst().contains { $0.deadlineCount >= 3 })
            let total = fires.all.reduce(0) { $0 + $1.deadlineCount }
            let last = try #require(fires.all.last)
            let first = try #require(fires.all.first)
            let span = Int((last.scheduledDeadline - first.scheduledDeadline) / .milliseconds(2))
            #expect(total == span + last.deadlineCount, "every grid deadline is accounted for exactly once (C4, C5)")
        }
    }
}
