import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// Per-handler policies given at `register` — retries, a concurrency limit, a lease — each beside
/// a handler on the runner's defaults, on both stores, exactly on the virtual clock.
@Suite("Durable timers: per-handler policies")
struct DurableHandlerPolicyTests {
    @Test(
        "A handler's own retry policy replaces the runner's: one parks after its single attempt, another waits 10, 20, 40 s between attempts and parks after its fourth, beside a handler on the runner's defaults",
        arguments: StoreKind.allCases)
    func retryPolicies(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let trace = RunnerTrace(virtual)
        let timers = try DurableTimers(
            store: store, namespace: namespace, clock: virtual.clock, options: trace.recording(exactOptions { $0.maxAttempts = 2 }))
        struct Failed: Error {}
        try await timers.register("strict", payload: Note.self, retry: DurableRetryPolicy(maxAttempts: 1)) { _, _ in throw Failed() }
        try await timers.register(
            "patient", payload: Note.self, retry: DurableRetryPolicy(maxAttempts: 4, delay: .seconds(10), maxDelay: .seconds(3_600))
        ) { _, _ in throw Failed() }
        try await timers.register("default", payload: Note.self) { _, _ in throw Failed() }
        await timers.start()
        for handler in ["strict", "patient", "default"] {
            try await timers.schedule(key: handler, at: at(1), handler: handler, payload: Note(text: handler))
        }
        // Each step reaches its instant (the clock nudged there until the condition holds): a retry
        // the runner arms after the clock got there runs at the next nudge.
        #expect(try await virtual.reach(1) { try await timers.timer(key: "strict")?.state == .failed }, "parked after its only attempt")
        #expect(try await virtual.reach(1) { try await timers.timer(key: "patient")?.lastError != nil })
        #expect(try await timers.timer(key: "patient")?.readyAt == at(11))
        #expect(try await virtual.reach(1) { try await timers.timer(key: "default")?.readyAt == at(2) }, "the runner's retryDelay: 1 s")
        #expect(try await virtual.reach(2) { try await timers.timer(key: "default")?.state == .failed }, "the runner's maxAttempts: 2")
        // "patient": attempts at 1, 11, 31 and 71; the clock moves on once each failure is written.
        #expect(try await virtual.reach(11) { try await timers.timer(key: "patient")?.readyAt == at(31) }, "attempt 2 failed at 11: 20 s; \(trace)")
        #expect(try await virtual.reach(31) { try await timers.timer(key: "patient")?.readyAt == at(71) }, "attempt 3 failed at 31: 40 s; \(trace)")
        #expect(try await virtual.reach(71) { try await timers.timer(key: "patient")?.state == .failed }, "parked after its fourth attempt")
        #expect(try await timers.history(key: "patient").map(\.attempt) == [4, 3, 2, 1])
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "A retry policy's jitter spreads keys that failed together, within the share it allows, and gives the same wait for the same key and attempt everywhere"
    )
    func jitter() {
        let policy = RunnerStateMachine.Retry(maxAttempts: 5, delay: 10_000_000_000, maxDelay: 100_000_000_000, jitterPermille: 500)
        let waits = (0..<200).map { policy.delay(after: 1, key: StoredKey("order/\($0)")) }
        #expect(waits.allSatisfy { (5_000_000_000...15_000_000_000).contains($0) })
        #expect(Set(waits).count > 150, "spread, not one instant")
        #expect(waits == (0..<200).map { policy.delay(after: 1, key: StoredKey("order/\($0)")) }, "the same for the same key and attempt")
        let none = RunnerStateMachine.Retry(maxAttempts: 5, delay: 10_000_000_000, maxDelay: 25_000_000_000, jitterPermille: 0)
        #expect((1...4).map { none.delay(after: $0, key: StoredKey("a")) } == [10_000_000_000, 20_000_000_000, 25_000_000_000, 25_000_000_000])
        // Pinned: every process of a fleet, of any release, waits the same for the same key and attempt.
        let pinned = RunnerStateMachine.Retry(maxAttempts: 5, delay: 1_000_000_000, maxDelay: 60_000_000_000, jitterPermille: 500)
        #expect(pinned.delay(after: 1, key: StoredKey("order/42")) == 1_404_562_011)
        #expect(pinned.delay(after: 2, key: StoredKey("order/42")) == 2_557_972_160)
        #expect(pinned.delay(after: 3, key: StoredKey("sale.end")) == 2_086_180_379)
    }

    @Test(
        "C17: a retry policy's jitter set after the policy was made is clamped as the initializer clamps it (NaN and infinities 0, past 1 is 1); such a policy registers, and its retry waits within twice the delay"
    )
    func jitterSetLaterIsClamped() async throws {
        var policy = DurableRetryPolicy(maxAttempts: 3, delay: .seconds(10), maxDelay: .seconds(60))
        for (value, clamped) in [(Double.nan, 0.0), (.infinity, 0), (-.infinity, 0), (-3, 0), (1e300, 1), (0.25, 0.25)] {
            policy.jitter = value
            #expect(policy.jitter == clamped, "jitter set to \(value)")
        }
        // 1e300 had trapped in `register` (its thousandths do not fit in 64 bits).
        policy.jitter = 1e300
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        struct Failed: Error {}
        try await timers.register("flaky", payload: Note.self, retry: policy) { _, _ in throw Failed() }
        await timers.start()
        try await timers.schedule(key: "flaky", at: at(1), handler: "flaky", payload: Note(text: "flaky"))
        #expect(try await virtual.reach(1) { try await timers.timer(key: "flaky")?.lastError != nil })
        let readyAt = try #require(try await timers.timer(key: "flaky")?.readyAt)
        #expect(readyAt >= at(1) && readyAt <= at(21), "a wait of 10 s spread by at most all of it: \(readyAt)")
        await timers.shutdown()
    }

    @Test(
        "C14: a handler with maxConcurrentRuns 2 runs six timers due at once two at a time, never three; the four waiting stay unclaimed (another instance may take them) while another handler's timers run past them; each slot that frees starts the next",
        arguments: StoreKind.allCases)
    func concurrencyLimit(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let limited = try await LimitedHandler(kind, file: file)
        await limited.timers.start()
        try await limited.schedule(reportsAt: at(1), quickAt: at(1))
        await limited.virtual.advance(by: .seconds(1))
        try await limited.expectRunsTwoAtATime()
    }

    @Test(
        "C14: a backlog (timers overdue at start) of a handler with maxConcurrentRuns 2 is swept within its limit: the sweeps leave its timers to others while its slots are taken, the other handler's backlog runs at once, and the rest of its own runs as slots free",
        arguments: StoreKind.allCases)
    func concurrencyLimitOfABacklog(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let limited = try await LimitedHandler(kind, file: file)
        try await limited.schedule(reportsAt: at(1), quickAt: at(2))
        // Overdue by more than a second when the runner starts: swept, not loaded.
        await limited.virtual.advance(by: .seconds(30))
        await limited.timers.start()
        try await limited.expectRunsTwoAtATime()
    }

    @Test(
        "A handler's own lease is what its claims hold — from a claim of a woken timer, a sweep's claim (written with the runner's lease, set to the handler's at its start), and each renewal, every third of the shortest lease — beside a handler on the runner's lease",
        arguments: StoreKind.allCases)
    func lease(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions { $0.lease = .seconds(30) })
        let finish = AsyncGate()
        try await timers.register("short", payload: Note.self, lease: .seconds(6)) { _, _ in await finish.wait() }
        try await timers.register("long", payload: Note.self) { _, _ in await finish.wait() }
        try await timers.schedule(key: "swept", at: at(1), handler: "short", payload: Note(text: "swept"))
        await virtual.advance(by: .seconds(5))
        await timers.start()
        #expect(try await eventually { try await timers.timer(key: "swept")?.leaseUntil == at(11) }, "swept at 5 with 30 s, then set to 6 s")
        try await timers.schedule(key: "woken", at: at(6), handler: "short", payload: Note(text: "woken"))
        try await timers.schedule(key: "other", at: at(6), handler: "long", payload: Note(text: "other"))
        await virtual.advance(by: .seconds(1))
        #expect(try await eventually { try await timers.timer(key: "other")?.leaseUntil == at(36) }, "the runner's lease")
        #expect(try await eventually { try await timers.timer(key: "woken")?.leaseUntil == at(12) }, "its handler's lease")
        // Renewals every 2 s (a third of 6 s) from the first claim, at 5: the next at 7. (On a
        // loaded machine a tick can find the last renewal's answer not yet back and leave the
        // claims to the next one, 2 s later: the clock moves on by the renewal period until one
        // has come, at most 10 times.)
        await virtual.advance(by: .seconds(1))
        var renewal = 7.0
        while try await !eventually(within: .seconds(10), { try await timers.timer(key: "other")?.leaseUntil == at(renewal + 30) }), renewal < 27 {
            await virtual.advance(by: .seconds(2))
            renewal += 2
        }
        #expect(try await timers.timer(key: "other")?.leaseUntil == at(renewal + 30), "the runner's lease from the renewal")
        #expect(try await timers.timer(key: "woken")?.leaseUntil == at(renewal + 6), "its handler's lease from the same renewal")
        #expect(try await timers.timer(key: "swept")?.leaseUntil == at(renewal + 6))
        finish.open()
        #expect(try await eventually { try await timers.count() == 0 })
        await timers.shutdown()
        await store.close()
    }

    @Test("C17: a lease or maxConcurrentRuns that cannot work is refused at register, with what was wrong")
    func badPolicies() async throws {
        let file = try TemporaryDatabase()
        let timers = try DurableTimers(path: file.path, options: exactOptions())
        await #expect(throws: DurableTimerError.invalidDuration("a handler's lease must be more than zero")) {
            try await timers.register("a", payload: Note.self, lease: .zero) { _, _ in }
        }
        await #expect(throws: DurableTimerError.invalidDuration("a handler's maxConcurrentRuns must be at least 1 (it was 0)")) {
            try await timers.register("b", payload: Note.self, maxConcurrentRuns: 0) { _, _ in }
        }
        try await timers.register("a", payload: Note.self, maxConcurrentRuns: 1, lease: .seconds(1)) { _, _ in }
    }
}

/// A runner with a handler "report" limited to two runs at once — each run held until the test
/// admits it — and a handler "quick" without a limit.
private struct LimitedHandler {
    let store: any DurableTimerStore
    let virtual: VirtualClock
    let timers: DurableTimers
    let reports = Turnstile()
    let quick = FireLog()

    init(_ kind: StoreKind, file: TemporaryDatabase) async throws {
        let namespace: String
        (store, namespace) = try await kind.makeStore(file: file)
        virtual = makeVirtualClock()
        timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        let (reports, quick) = (reports, quick)
        try await timers.register("report", payload: Note.self, maxConcurrentRuns: 2) { _, _ in await reports.pass() }
        try await timers.register("quick", payload: Note.self) { note, fire in quick.append(note.text, fire) }
    }

    /// Six reports and three quick timers.
    func schedule(reportsAt reportDue: Date, quickAt quickDue: Date) async throws {
        for index in 1...6 { try await timers.schedule(key: "report/\(index)", at: reportDue, handler: "report", payload: Note(text: "\(index)")) }
        for index in 1...3 { try await timers.schedule(key: "quick/\(index)", at: quickDue, handler: "quick", payload: Note(text: "\(index)")) }
    }

    /// Two reports run and the quick timers all ran; then each report that ends frees a slot the
    /// next one starts in, until all six ran — never more than two at once — and the runner is shut
    /// down.
    func expectRunsTwoAtATime(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(
            await eventually { reports.counts.running == 2 && quick.count == 3 }, "two reports run; the quick ones are not held up",
            sourceLocation: sourceLocation)
        try await expectWaitingUnclaimed(4, sourceLocation: sourceLocation)
        for ended in 1...4 {
            reports.admit(1)
            #expect(await eventually { reports.counts.ended == ended && reports.counts.running == 2 }, sourceLocation: sourceLocation)
            try await expectWaitingUnclaimed(4 - ended, sourceLocation: sourceLocation)
        }
        reports.admit(2)
        #expect(try await eventually { try await timers.count() == 0 }, sourceLocation: sourceLocation)
        #expect(reports.counts.peak == 2 && reports.counts.ended == 6, sourceLocation: sourceLocation)
        await timers.shutdown()
        await store.close()
    }

    /// The reports not running are unclaimed: `count` of them (once what was given back is
    /// written).
    private func expectWaitingUnclaimed(_ count: Int, sourceLocation: SourceLocation) async throws {
        let unclaimed = { try await timers.timers(limit: 100).filter { $0.handler == "report" && $0.owner == nil } }
        let settled = try await eventually { try await unclaimed().count == count }
        let keys = try await unclaimed().map(\.key)
        #expect(settled, "\(keys)", sourceLocation: sourceLocation)
    }
}

/// Counts the runs under way, the most at once and those ended; each run waits for a permit
/// (``admit(_:)``) before it ends.
final class Turnstile: @unchecked Sendable {
    private let lock = NSLock()
    private var permits = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var running = 0
    private var peak = 0
    private var ended = 0

    /// A run: counted while it waits for its permit.
    func pass() async {
        lock.withLock {
            running += 1
            peak = max(peak, running)
        }
        await withCheckedContinuation { continuation in
            let admitted = lock.withLock {
                if permits > 0 {
                    permits -= 1
                    return true
                }
                waiters.append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
        lock.withLock {
            running -= 1
            ended += 1
        }
    }

    /// Lets `count` runs end (the waiting first, then the next to come).
    func admit(_ count: Int) {
        let resumed = lock.withLock {
            permits += count
            let taken = Array(waiters.prefix(permits))
            waiters.removeFirst(taken.count)
            permits -= taken.count
            return taken
        }
        for waiter in resumed { waiter.resume() }
    }

    var counts: (running: Int, peak: Int, ended: Int) { lock.withLock { (running, peak, ended) } }
}
