import Foundation
import Synchronization
import Testing
import TimerKit
import TimerKitTesting

/// Async code on a virtual clock: `advance` returns once the code it resumed is suspended again.
/// Every expectation here is read right after an `advance` returns — no polling, no yields.
@Suite("VirtualClock with async code")
struct AsyncVirtualClockTests {
    /// A log that tasks on the executor write and the test reads after an advance.
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func append(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    actor Tally {
        private(set) var total = 0
        func add(_ amount: Int, after delay: Duration, on clock: VirtualClock) async throws {
            try await Task.sleep(for: delay, clock: clock)
            total += amount
        }
    }

    @Test("Determinism: a task that sleeps, works and sleeps again is exactly as far as the clock says after every advance, 1,000 runs out of 1,000")
    func sleepWorkSleepIsExact() async throws {
        for run in 0..<1_000 {
            let virtual = VirtualClock()
            let start = virtual.now
            let log = Log()
            let tally = Tally()
            let task = Task(executorPreference: virtual.executor) {
                for step in 1...3 {
                    try await Task.sleep(for: .seconds(1), clock: virtual)
                    log.append("step \(step) at \(virtual.now - start)")
                    // More work after the sleep: a default actor and a child task, then sleep again.
                    try await tally.add(step, after: .milliseconds(10), on: virtual)
                    async let doubled = { step * 2 }()
                    log.append("child \(await doubled)")
                }
                return "done"
            }
            await virtual.advance(by: .zero)
            #expect(log.all.isEmpty, "run \(run)")
            #expect(virtual.sleepers == [start + .seconds(1)], "run \(run)")

            await virtual.advance(by: .seconds(1))
            #expect(log.all == ["step 1 at 1.0 seconds"], "run \(run)")
            #expect(virtual.sleepers == [start + .milliseconds(1_010)], "run \(run): the actor's sleep")

            await virtual.advance(by: .milliseconds(10))
            #expect(log.all == ["step 1 at 1.0 seconds", "child 2"], "run \(run)")
            #expect(await tally.total == 1, "run \(run)")
            #expect(virtual.sleepers == [start + .milliseconds(2_010)], "run \(run)")

            // One advance across several sleeps runs them all, each at its own deadline.
            await virtual.advance(by: .seconds(10))
            #expect(log.all == ["step 1 at 1.0 seconds", "child 2", "step 2 at 2.01 seconds", "child 4", "step 3 at 3.02 seconds", "child 6"], "run \(run)")
            #expect(await tally.total == 6, "run \(run)")
            #expect(virtual.sleepers.isEmpty, "run \(run)")
            #expect(try await task.value == "done")
        }
    }

    @Test("Sleepers resume in (deadline, creation) order, each seeing now at its own deadline")
    func sleepersResumeInOrder() async throws {
        let virtual = VirtualClock()
        let log = Log()
        for (name, seconds) in [("c", 2), ("a", 1), ("b", 1), ("d", 2), ("e", 3)] {
            Task(executorPreference: virtual.executor) {
                try await Task.sleep(for: .seconds(seconds), clock: virtual)
                log.append("\(name)@\(virtual.now.nanoseconds / 1_000_000_000)")
            }
            await virtual.advance(by: .zero)  // each task reaches its sleep before the next starts
        }
        #expect(virtual.sleepers.count == 5)
        await virtual.advance(by: .seconds(2))
        #expect(log.all == ["a@1", "b@1", "c@2", "d@2"])
        let runs = await virtual.run()
        #expect(runs == 1)
        #expect(log.all == ["a@1", "b@1", "c@2", "d@2", "e@3"])
    }

    @Test("A task group's children inherit the executor: an advance returns once every child due has finished")
    func taskGroupChildren() async throws {
        let virtual = VirtualClock()
        let log = Log()
        let task = Task(executorPreference: virtual.executor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for seconds in [3, 1, 2] {
                    group.addTask {
                        try await Task.sleep(for: .seconds(seconds), clock: virtual)
                        log.append("child \(seconds)")
                    }
                }
                try await group.waitForAll()
                log.append("group done")
            }
        }
        await virtual.advance(by: .seconds(2))
        #expect(log.all == ["child 1", "child 2"])
        await virtual.advance(by: .seconds(1))
        #expect(log.all == ["child 1", "child 2", "child 3", "group done"])
        try await task.value
    }

    @Test("A timeout on the virtual clock fires exactly at its limit, and the caller has handled it when advance returns")
    func timeoutIsExact() async throws {
        let virtual = VirtualClock()
        let log = Log()
        Task(executorPreference: virtual.executor) {
            do {
                try await withTimeout(.seconds(5), clock: virtual.clock) {
                    try await Task.sleep(for: .seconds(10), clock: virtual)
                }
                log.append("finished")
            } catch let timeout as TimeoutError {
                log.append("timed out after \(timeout.waited)")
            }
        }
        await virtual.advance(by: .milliseconds(4_999))
        #expect(log.all.isEmpty)
        await virtual.advance(by: .milliseconds(1))
        #expect(log.all == ["timed out after 5.0 seconds"])
        #expect(virtual.sleepers.isEmpty)
    }

    @Test("Timers and sleepers share the clock: a repeating timer's fires and a sleeper's wake-up interleave by deadline")
    func timersAndSleepersInterleave() async throws {
        let virtual = VirtualClock()
        let log = Log()
        let timer = try ScheduledTimer.repeating(every: .milliseconds(400), clock: virtual.clock) { _, fire in
            log.append("tick \(fire.sequenceNumber)")
        }
        Task(executorPreference: virtual.executor) {
            try await Task.sleep(for: .milliseconds(1_000), clock: virtual)
            log.append("woke")
        }
        await virtual.advance(by: .seconds(1))
        #expect(log.all == ["tick 1", "tick 2", "woke"])
        timer.invalidate()
    }

    @Test("Leaked sleepers are listed, and a released clock resumes them with clockShutDown instead of losing them")
    func leakedSleepers() async throws {
        var virtual: VirtualClock? = VirtualClock()
        let executor = virtual!.executor
        let clock = virtual!.clock
        let task = Task(executorPreference: executor) {
            try await Task.sleep(for: .seconds(60), clock: clock)
        }
        await virtual!.advance(by: .zero)
        #expect(virtual!.sleepers == [TimerInstant(kind: .virtual, nanoseconds: 60_000_000_000)])
        virtual = nil
        await #expect(throws: TimerError.clockShutDown) { try await task.value }
    }

    @Test("A cancelled sleeper leaves the list at once with CancellationError")
    func cancelledSleeperLeavesTheList() async throws {
        let virtual = VirtualClock()
        let task = Task(executorPreference: virtual.executor) {
            try await Task.sleep(for: .seconds(60), clock: virtual)
        }
        await virtual.advance(by: .zero)
        #expect(virtual.sleepers.count == 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(virtual.sleepers.isEmpty)
        #expect(virtual.pendingTimerCount == 0)
    }

    /// The example of the article "Testing async code with VirtualClock", as written there.
    final class FakeAPI: Sendable {
        private let count = Mutex(0)
        let readyAfter: Int
        init(readyAfter: Int) { self.readyAfter = readyAfter }
        var requests: Int { count.withLock { $0 } }
        func isReady() async -> Bool {
            count.withLock {
                $0 += 1
                return $0 >= readyAfter
            }
        }
    }

    static func waitUntilReady(_ api: FakeAPI, every interval: Duration, clock: some Clock<Duration>) async throws {
        while true {
            try await clock.sleep(for: interval)
            if await api.isReady() { return }
        }
    }

    @Test("The article's example: a poll loop generic over Clock is exactly as far as the virtual clock says")
    func pollsEverySecondUntilDone() async throws {
        let virtual = VirtualClock()
        let api = FakeAPI(readyAfter: 3)
        let poll = Task(executorPreference: virtual.executor) {
            try await Self.waitUntilReady(api, every: .seconds(1), clock: virtual)
        }
        await virtual.advance(by: .seconds(2))
        #expect(api.requests == 2)
        await virtual.advance(by: .seconds(1))
        #expect(api.requests == 3)
        try await poll.value
        #expect(virtual.sleepers.isEmpty)
    }
}
