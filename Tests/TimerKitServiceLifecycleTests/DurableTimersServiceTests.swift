import Foundation
import Logging
import ServiceLifecycle
import Testing
import TimerKitDurable
import TimerKitServiceLifecycle

/// `DurableTimersService` in a `ServiceGroup`, on a real SQLite file and the real clock: what a
/// server's SIGTERM does to its durable timers.
@Suite("Durable timers as a service (swift-service-lifecycle)")
struct DurableTimersServiceTests {
    @Test(
        "C8: the group's graceful shutdown lets the handler under way finish and writes its end before run() returns; a timer not yet due stays stored; the instance's record is removed"
    )
    func gracefulShutdown() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("service-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let timers = try DurableTimers(path: file)
        let started = Gate()
        let finish = Gate()
        try await timers.register("slow", payload: String.self) { _, _ in
            started.open()
            await finish.wait()
        }
        try await timers.schedule(key: "now", after: .zero, handler: "slow", payload: "now")
        try await timers.schedule(key: "later", after: .seconds(3_600), handler: "slow", payload: "later")
        let group = ServiceGroup(services: [DurableTimersService(timers)], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let returned = Gate()
        let run = Task {
            try await group.run()
            returned.open()
        }
        await started.wait()
        #expect(try await timers.instances().count == 1, "recorded alive at its first load")
        await group.triggerGracefulShutdown()
        // However long this takes, run() cannot return while the handler holds its claim.
        try await Task.sleep(for: .milliseconds(200))
        #expect(!returned.isOpen, "run() waits for the handler under way")
        finish.open()
        try await run.value
        #expect(try await timers.timer(key: "now") == nil, "its end was written before run() returned")
        #expect(try await timers.timer(key: "later") != nil)
        #expect(try await timers.instances().isEmpty, "its instance record removed")
    }

    @Test(
        "C8: cancelling the group shuts the runner down with no grace: the running handler's task is cancelled, and its claim is given back with its attempt not counted"
    )
    func cancellation() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("service-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let timers = try DurableTimers(path: file)
        let started = Gate()
        let cancelled = Gate()
        try await timers.register("slow", payload: String.self) { _, _ in
            started.open()
            do {
                try await Task.sleep(for: .seconds(3_600))
            } catch {
                cancelled.open()
                throw error
            }
        }
        try await timers.schedule(key: "now", after: .zero, handler: "slow", payload: "now")
        let group = ServiceGroup(services: [DurableTimersService(timers)], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let run = Task { try await group.run() }
        await started.wait()
        run.cancel()
        _ = try? await run.value
        await cancelled.wait()
        let timer = try await eventuallyReleased(timers, key: "now")
        #expect(timer?.owner == nil && timer?.attempts == 0, "given back, not counted")
    }

    /// The timer under `key` once no claim holds it (the release is written after the handler's
    /// task ends).
    private func eventuallyReleased(_ timers: DurableTimers, key: String) async throws -> DurableTimerInfo? {
        let end = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < end {
            if let timer = try await timers.timer(key: key), timer.owner == nil { return timer }
            try await Task.sleep(for: .milliseconds(5))
        }
        return try await timers.timer(key: key)
    }
}

/// A gate tasks wait at until it is opened.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var opened = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    var isOpen: Bool { lock.withLock { opened } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = lock.withLock {
                if opened { return true }
                waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiting = lock.withLock {
            opened = true
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiting { waiter.resume() }
    }
}
