import Foundation
import GRDB
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// The runner under the faults a real deployment meets, in one process on a real SQLite file:
/// rows it cannot plan for, keys equal only under Unicode normalization, hung handlers, a shutdown
/// in the middle of a claim, and another connection holding the file locked past the lease.
@Suite("Durable timers: faults in one process")
struct DurableFaultTests {
    /// A runner on `database` with a "note" handler that records what it sees.
    func runner(_ database: TemporaryDatabase, _ clock: TimerClock, log: FireLog, options: DurableTimers.Options = exactOptions()) async throws
        -> DurableTimers
    {
        let timers = try DurableTimers(path: database.path, clock: clock, options: options)
        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        return timers
    }

    @Test(
        "A calendar rule whose time zone this system does not know is parked with the reason when it comes due, never deleted, never run; the other timers fire"
    )
    func unknownZoneIsParked() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual.clock, log: log)
        await timers.start()
        let rule = try CalendarRule.daily(at: 9, in: try #require(TimeZone(identifier: "Europe/Berlin")))
        try await timers.schedule(key: "daily", rule: rule, handler: "note", payload: Note(text: "daily"))
        try await timers.schedule(key: "plain", after: .seconds(12 * 3_600), handler: "note", payload: Note(text: "plain"))
        // As if written by a system with a newer tz database: a zone this one has never heard of.
        try await DatabaseQueue(path: database.path).write { db in
            try db.execute(sql: "UPDATE timerkit_timers SET rule = replace(rule, 'Europe\\/Berlin', 'Mars\\/Olympus_Mons') WHERE key = 'daily'")
            try db.execute(sql: "UPDATE timerkit_timers SET rule = replace(rule, 'Europe/Berlin', 'Mars/Olympus_Mons') WHERE key = 'daily'")
        }
        #expect(try await timers.timer(key: "daily")?.rule?.timeZoneIdentifier == "Mars/Olympus_Mons")
        await virtual.advance(by: .seconds(25 * 3_600))
        #expect(log.all.map(\.payload) == ["plain"], "the rule's occurrence did not run")
        let parked = try #require(try await timers.timer(key: "daily"), "still stored")
        #expect(parked.state == .failed)
        #expect(parked.lastError?.contains("the time zone 'Mars/Olympus_Mons' is unknown here") == true, "\(parked.lastError ?? "nil")")
        await timers.shutdown()
    }

    @Test(
        "Keys are compared as bytes everywhere: \"café\" in NFC and in NFD are two timers, both due at 10 s, and both fire at 10 s; cancelling one leaves the other"
    )
    func keysAreBytes() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual.clock, log: log)
        await timers.start()
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        #expect(nfc == nfd, "Swift's String compares them as equal")
        for (key, text) in [(nfc, "nfc"), (nfd, "nfd"), ("\u{C5}", "angstrom-letter"), ("\u{212B}", "angstrom-sign")] {
            try await timers.schedule(key: key, at: at(10), handler: "note", payload: Note(text: text))
        }
        #expect(try await timers.count() == 4)
        try await timers.schedule(key: "x\u{C5}", at: at(20), handler: "note", payload: Note(text: "kept"))
        try await timers.schedule(key: "x\u{212B}", at: at(20), handler: "note", payload: Note(text: "cancelled"))
        #expect(try await timers.cancel(key: "x\u{212B}") == .cancelled)
        await virtual.advance(by: .seconds(20))
        #expect(Set(log.all.map(\.payload)) == ["nfc", "nfd", "angstrom-letter", "angstrom-sign", "kept"])
        #expect(log.all.filter { $0.payload != "kept" }.allSatisfy { seconds($0.fire.firedAt) == 10 && $0.fire.lateness == .zero })
        #expect(try await timers.count() == 0)
        await timers.shutdown()
    }

    @Test(
        "A hung handler with a timeout: its task is cancelled at the timeout, the run counts as a failed attempt and is retried; after maxAttempts the timer is parked with the reason"
    )
    func hungHandlerTimesOut() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let starts = FireLog()
        let cancellations = FireLog()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions { $0.maxAttempts = 2 })
        try await timers.register("hang", payload: Note.self, timeout: .seconds(5)) { note, fire in
            starts.append(note.text, fire)
            do {
                try await Task.sleep(for: .seconds(3_600), clock: virtual.clock)
            } catch {
                cancellations.append(note.text, fire)
                throw error
            }
        }
        await timers.start()
        try await timers.schedule(key: "k", at: at(10), handler: "hang", payload: Note(text: "k"))
        await virtual.advance(by: .seconds(10))
        #expect(starts.count == 1 && cancellations.count == 0)
        await virtual.advance(by: .seconds(5))
        #expect(cancellations.count == 1, "cancelled at the timeout")
        #expect(try await timers.timer(key: "k")?.lastError == "the handler did not finish within its timeout of 5.0 seconds")
        await virtual.advance(by: .seconds(1))
        #expect(starts.all.map(\.fire.attempt) == [1, 2] && starts.all.map { seconds($0.fire.firedAt) } == [10, 16], "retried after retryDelay")
        await virtual.advance(by: .seconds(5))
        #expect(cancellations.count == 2)
        let parked = try #require(try await timers.timer(key: "k"))
        #expect(parked.state == .failed && parked.attempts == 2)
        await virtual.advance(by: .seconds(60))
        #expect(starts.count == 2, "parked: never run again")
        await timers.shutdown()
    }

    @Test(
        "cancel(key:) of a timer that another runner on the file is running says cancelledWhileRunning; that runner's handler is cancelled at its next renewal, and nothing is written for the run"
    )
    func cancelWhileRunningElsewhere() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let ended = FireLog()
        let running = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions { $0.lease = .seconds(30) })
        try await running.register("long", payload: Note.self) { note, fire in
            do {
                try await Task.sleep(for: .seconds(3_600), clock: virtual.clock)
            } catch {
                ended.append("cancelled", fire)
                throw error
            }
        }
        await running.start()
        try await running.schedule(key: "k", at: at(10), handler: "long", payload: Note(text: "k"))
        await virtual.advance(by: .seconds(10))
        #expect(running.runningHandlers == 1)
        let other = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        #expect(try await other.cancel(key: "k") == .cancelledWhileRunning)
        #expect(try await other.cancel(key: "k") == .notFound)
        #expect(ended.count == 0, "the running runner has not heard yet")
        await virtual.advance(by: .seconds(10))
        #expect(ended.all.map(\.payload) == ["cancelled"], "its renewal found the claim gone, a third of the lease later")
        #expect(running.runningHandlers == 0)
        #expect(try await running.count() == 0)
        await running.shutdown()
    }

    @Test("cancel(key:) of a timer this runner is running says cancelledWhileRunning and cancels the handler's task at once")
    func cancelWhileRunningHere() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let ended = FireLog()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        try await timers.register("long", payload: Note.self) { note, fire in
            do {
                try await Task.sleep(for: .seconds(3_600), clock: virtual.clock)
            } catch {
                ended.append("cancelled", fire)
                throw error
            }
        }
        await timers.start()
        try await timers.schedule(key: "k", at: at(10), handler: "long", payload: Note(text: "k"))
        await virtual.advance(by: .seconds(10))
        #expect(try await timers.cancel(key: "k") == .cancelledWhileRunning)
        await virtual.advance(by: .zero)
        #expect(ended.count == 1 && timers.runningHandlers == 0)
        await timers.shutdown()
    }

    @Test(
        "A shutdown while a claim round waits on the file's lock: the claim it takes is given back (attempt not counted), the handler never starts, and no row is left owned"
    )
    func shutdownDuringAClaimRound() async throws {
        let database = try TemporaryDatabase()
        let log = FireLog()
        let timers = try await runner(database, .wall, log: log, options: exactOptions { $0.busyTimeout = .seconds(60) })
        try await timers.schedule(key: "k", after: .milliseconds(200), handler: "note", payload: Note(text: "k"))
        let lock = try SQLiteLock(path: database.path)
        await timers.start()
        #expect(await eventually { timers.runner.read { $0.isClaimRoundInFlight } }, "the wake-up's claim round waits on the lock")
        let shutdown = Task { await timers.shutdown() }
        #expect(await eventually { timers.runner.read { $0.lifecycle == .stopping } })
        lock.release()
        await shutdown.value
        let record = try #require(try await timers.store.record(namespace: "default", key: "k"))
        #expect(record.owner == nil && record.attempts == 0, "given back: owner \(record.owner ?? "nil"), attempts \(record.attempts)")
        #expect(log.count == 0)
    }

    @Test(
        "Renewals blocked past the lease (another connection holds the file): the runner never claims the key it is running, reports the failures and the lost lease, cancels the handler; one run, completed once the lock is gone"
    )
    func renewalsBlockedPastTheLease() async throws {
        let database = try TemporaryDatabase()
        let errors = ErrorLog()
        let started = AsyncGate()
        let finish = AsyncGate()
        let runs = FireLog()
        let sawCancellation = Locked(false)
        // A horizon of 2 s loads the claimed row (ready at its lease's end) every second: the old
        // runner armed it there and claimed its own key.
        let options = exactOptions {
            $0.lease = .seconds(1)
            $0.horizon = .seconds(2)
            $0.busyTimeout = .milliseconds(100)
            $0.onError = { errors.append($0) }
        }
        let timers = try DurableTimers(path: database.path, options: options)
        try await timers.register("long", payload: Note.self) { note, fire in
            runs.append(note.text, fire)
            started.open()
            await finish.wait()  // ignores cancellation: returns only when the test lets it
            sawCancellation.withLock { $0 = Task.isCancelled }
        }
        await timers.start()
        try await timers.schedule(key: "k", after: .zero, handler: "long", payload: Note(text: "k"))
        await started.wait()
        let lock = try SQLiteLock(path: database.path)
        // Held until the runner has seen its lease pass without a renewal, however slow the machine.
        #expect(await eventually { errors.all.contains(.leaseLost("k")) }, "reported: \(errors.all)")
        #expect(errors.all.contains { if case .locked = $0 { true } else { false } }, "the failed renewals were reported")
        try await Task.sleep(for: .seconds(2))  // two more leases: the old runner claimed its own key here
        lock.release()
        finish.open()
        #expect(await eventually { (try? await timers.count()) == 0 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(runs.count == 1, "one run: \(runs.all.map(\.fire))")
        #expect(sawCancellation.withLock { $0 }, "the handler's task was cancelled past the lease")
        await timers.shutdown()
    }

    @Test(
        "A completion delayed past the lease (another connection holds the file as the handler returns): retried until it lands, the lease renewed meanwhile; the occurrence runs once"
    )
    func completionDelayedPastTheLease() async throws {
        let database = try TemporaryDatabase()
        let errors = ErrorLog()
        let runs = FireLog()
        let locked = Locked<SQLiteLock?>(nil)
        // A horizon of 2 s loads the claimed row (ready at its lease's end) every second: the old
        // runner armed it there and claimed its own key.
        let options = exactOptions {
            $0.lease = .seconds(1)
            $0.horizon = .seconds(2)
            $0.busyTimeout = .milliseconds(100)
            $0.onError = { errors.append($0) }
        }
        let timers = try DurableTimers(path: database.path, options: options)
        try await timers.register("quick", payload: Note.self) { note, fire in
            runs.append(note.text, fire)
            // The lock is taken before the handler returns: its end cannot be written.
            let lock = try SQLiteLock(path: database.path)
            locked.withLock { $0 = lock }
        }
        await timers.start()
        try await timers.schedule(key: "k", after: .zero, handler: "quick", payload: Note(text: "k"))
        #expect(await eventually { errors.all.filter { if case .locked = $0 { true } else { false } }.count >= 3 }, "the completion kept failing")
        try await Task.sleep(for: .seconds(2))  // past the lease by far: the old runner re-ran it
        #expect(try await timers.count() == 1, "not written yet")
        locked.withLock { $0 }?.release()
        #expect(await eventually { (try? await timers.count()) == 0 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(runs.count == 1, "one run: \(runs.all.map(\.fire))")
        #expect(!errors.all.contains(.leaseLost("k")), "nobody else took it: not lost")
        await timers.shutdown()
    }

    @Test(
        "The SQLite store's calls run off Swift's cooperative pool: while eight schedules wait out another connection's lock, the application's tasks keep running"
    )
    func storeCallsLeaveThePoolFree() async throws {
        let database = try TemporaryDatabase()
        let timers = try DurableTimers(path: database.path, options: exactOptions { $0.busyTimeout = .seconds(60) })
        try await timers.register("note", payload: Note.self) { _, _ in }
        let lock = try SQLiteLock(path: database.path)
        let finished = Locked(0)
        let writes = (0..<8).map { index in
            Task {
                defer { finished.withLock { $0 += 1 } }
                return try await timers.schedule(key: "k\(index)", after: .seconds(60), handler: "note", payload: Note(text: "\(index)"))
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        // Eight writes blocked in SQLite's busy handler would hold every thread of the pool (it has
        // one per core) until they fail a minute later; these tasks would wait for that.
        let work = await withTaskGroup(of: Int.self) { group in
            for index in 0..<16 { group.addTask { index } }
            return await group.reduce(0, +)
        }
        #expect(work == 120)
        #expect(finished.withLock { $0 } == 0, "the tasks ran while every write still waited for the lock")
        lock.release()
        for write in writes { #expect(try await write.value) }
        #expect(try await timers.count() == 8)
    }
}

/// Another connection holding a SQLite file's write lock (`BEGIN EXCLUSIVE`), on a thread of its
/// own, until ``release()``.
final class SQLiteLock: @unchecked Sendable {
    private let released = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let state = Locked(true)

    struct NotLocked: Error {}

    /// Takes the lock, waiting for a write under way (the runner's renewal, say) to end: without a
    /// busy timeout, `BEGIN EXCLUSIVE` failed at once when it met one, and the thread waiting for
    /// the lock was never told (a handler hung for good under ThreadSanitizer in CI).
    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let locked = DispatchSemaphore(value: 0)
        let taken = Locked(false)
        let (released, ended) = (released, ended)
        Thread {
            try? queue.writeWithoutTransaction { db in
                defer { locked.signal() }
                try db.execute(sql: "BEGIN EXCLUSIVE")
                taken.withLock { $0 = true }
                locked.signal()
                released.wait()
                try db.execute(sql: "ROLLBACK")
            }
            ended.signal()
        }.start()
        locked.wait()
        guard taken.withLock({ $0 }) else {
            state.withLock { $0 = false }
            throw NotLocked()
        }
    }

    var isHeld: Bool { state.withLock { $0 } }

    /// Lets the lock go and waits until it is gone. Idempotent.
    func release() {
        let wasHeld = state.withLock { held in
            defer { held = false }
            return held
        }
        guard wasHeld else { return }
        released.signal()
        ended.wait()
    }
}

/// The errors a runner reported, in order.
final class ErrorLog: Sendable {
    private let errors = Locked<[DurableTimerError]>([])

    func append(_ error: DurableTimerError) { errors.withLock { $0.append(error) } }
    var all: [DurableTimerError] { errors.withLock { $0 } }
}
