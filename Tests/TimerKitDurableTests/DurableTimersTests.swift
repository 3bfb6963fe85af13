import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// Durable timers on a virtual clock and a real SQLite file: exact, deadline by deadline.
@Suite("Durable timers")
struct DurableTimersTests {
    /// A runner on `database`, with a "note" handler that records what it sees.
    func runner(_ database: TemporaryDatabase, _ virtual: VirtualClock, log: FireLog, options: DurableTimers.Options = exactOptions()) async throws
        -> DurableTimers
    {
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: options)
        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        return timers
    }

    @Test("C2: a one-shot fires at its deadline, exactly, once; then it is removed")
    func oneShot() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual, log: log)
        await timers.start()
        try await timers.schedule(key: "reminder", at: at(30), handler: "note", payload: Note(text: "call back"))
        await virtual.advance(by: .seconds(29))
        #expect(log.count == 0)
        await virtual.advance(by: .seconds(1))
        let fire = try #require(log.all.first)
        #expect(log.count == 1 && fire.payload == "call back")
        #expect(seconds(fire.fire.scheduledDeadline) == 30 && fire.fire.lateness == .zero && fire.fire.attempt == 1 && fire.fire.deadlineCount == 1)
        #expect(try await timers.timer(key: "reminder") == nil)
        await virtual.advance(by: .seconds(100))
        #expect(log.count == 1)
        await timers.shutdown()
    }

    @Test("No polling: a timer scheduled inside the horizon is armed at once, and one beyond it is loaded by a refill in time")
    func horizon() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual, log: log, options: exactOptions { $0.horizon = .seconds(10) })
        await timers.start()
        try await timers.schedule(key: "soon", after: .milliseconds(1_500), handler: "note", payload: Note(text: "soon"))
        try await timers.schedule(key: "later", at: at(95), handler: "note", payload: Note(text: "later"))
        await virtual.advance(by: .milliseconds(1_500))
        #expect(log.all.map(\.payload) == ["soon"])
        await virtual.advance(to: virtual.now.advanced(by: .milliseconds(93_500)))
        #expect(log.all.map(\.payload) == ["soon", "later"])
        #expect(seconds(log.all[1].fire.firedAt) == 95)
        await timers.shutdown()
    }

    @Test("C4: a repeating timer keeps its grid across a restart: first + k·interval, whatever the restart's timing")
    func gridAcrossRestart() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let first = try await runner(database, virtual, log: log)
        await first.start()
        try await first.schedule(key: "tick", every: .seconds(10), first: at(10), handler: "note", payload: Note(text: "tick"))
        await virtual.advance(by: .seconds(25))
        await first.shutdown()
        // Restarted 2 s later, before the next occurrence (30 s): nothing was missed.
        await virtual.advance(by: .seconds(2))
        let second = try await runner(database, virtual, log: log)
        await second.start()
        await virtual.advance(to: virtual.now.advanced(by: .seconds(23)))
        #expect(log.all.map { seconds($0.fire.scheduledDeadline) } == [10, 20, 30, 40, 50])
        #expect(log.all.allSatisfy { $0.fire.lateness == .zero && $0.fire.deadlineCount == 1 })
        #expect(try await second.timer(key: "tick")?.fireCount == 5)
        await second.shutdown()
    }

    @Test(
        "C5 after downtime, per timer: once fires one for all missed, skip fires none and counts them, all(max:) fires the latest max, within(window) the recent ones"
    )
    func misfireAfterDowntime() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let first = try await runner(database, virtual, log: log)
        for (key, policy) in [("once", MisfirePolicy.once), ("skip", .skip), ("all", .all(max: 3)), ("within", .within(.seconds(25)))] {
            try await first.schedule(key: key, every: .seconds(10), first: at(10), handler: "note", payload: Note(text: key), misfire: policy)
        }
        await first.shutdown()
        // Down for 65 s: the occurrences at 10 … 60 (six of them) were missed.
        await virtual.advance(by: .seconds(65))
        let second = try await runner(database, virtual, log: log)
        await second.start()
        await virtual.advance(by: .zero)
        let fires = Dictionary(grouping: log.all, by: \.payload)
        let once = try #require(fires["once"]?.first?.fire)
        #expect(fires["once"]?.count == 1 && seconds(once.scheduledDeadline) == 10 && once.deadlineCount == 6 && once.lateness == .seconds(55))
        #expect(fires["skip"] == nil)
        #expect(fires["all"]?.map { seconds($0.fire.scheduledDeadline) } == [40, 50, 60])
        #expect(fires["all"]?.map(\.fire.skippedDeadlineCount) == [3, 0, 0])
        let within = try #require(fires["within"]?.first?.fire)
        #expect(fires["within"]?.count == 1 && seconds(within.scheduledDeadline) == 40 && within.deadlineCount == 3 && within.skippedDeadlineCount == 3)
        // Then every timer is back on its grid; skip's next fire counts the six it skipped.
        await virtual.advance(by: .seconds(5))
        let at70 = log.all.filter { seconds($0.fire.scheduledDeadline) == 70 }
        #expect(Set(at70.map(\.payload)) == ["once", "skip", "all", "within"])
        #expect(at70.first { $0.payload == "skip" }?.fire.skippedDeadlineCount == 6)
        await second.shutdown()
    }

    @Test("Catch-up is spread: after downtime, 2,000 overdue timers start over count ÷ catchUpRate seconds, none lost")
    func catchUpIsSpread() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let options = exactOptions {
            $0.catchUpRate = 1_000
            $0.maxConcurrentHandlers = 4
        }
        let first = try await runner(database, virtual, log: log, options: options)
        let stored = try await first.schedule((0..<2_000).map { (key: "t\($0)", at: at(1), payload: Note(text: "\($0)")) }, handler: "note")
        #expect(stored == 2_000)
        await first.shutdown()
        await virtual.advance(by: .seconds(100))
        let second = try await runner(database, virtual, log: log, options: options)
        await second.start()
        await virtual.advance(by: .zero)
        #expect(log.count <= 10, "not all at once: a hundredth of a second's worth at most")
        await virtual.advance(by: .seconds(1))
        #expect(log.count > 800 && log.count < 1_200, "about half within the first second of two")
        await virtual.advance(by: .seconds(1))
        #expect(log.count == 2_000 && Set(log.all.map(\.payload)).count == 2_000)
        #expect(try await second.count() == 0)
        await second.shutdown()
    }

    /// How many overdue timers the restart test stores: 10,000 in the suite (which CI runs five
    /// times, under sanitizers too); CI's own step runs it once with 100,000
    /// (`TIMERKIT_DURABLE_OVERDUE=100000`), about 40 s in a debug build.
    static let overdueCount = ProcessInfo.processInfo.environment["TIMERKIT_DURABLE_OVERDUE"].flatMap(Int.init) ?? 10_000

    @Test(
        "Restart after downtime with 10,000 overdue timers (100,000 in CI's own step): each policy applied, the catch-up spread over count ÷ catchUpRate, none lost"
    )
    func manyOverdue() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let options = exactOptions {
            $0.catchUpRate = Self.overdueCount / 5
            $0.durability = .normal
        }
        let first = try await runner(database, virtual, log: log, options: options)
        let count = Self.overdueCount
        // One-shots under .once, and under .within(1 min): a day of downtime is past that window.
        #expect(try await first.schedule((0..<count / 2).map { (key: "once/\($0)", at: at(1), payload: Note(text: "once")) }, handler: "note") == count / 2)
        #expect(
            try await first.schedule(
                (0..<count / 2).map { (key: "within/\($0)", at: at(1), payload: Note(text: "within")) }, handler: "note", misfire: .within(.seconds(60)))
                == count / 2)
        await first.shutdown()
        await virtual.advance(by: .seconds(86_400))
        let second = try await runner(database, virtual, log: log, options: options)
        await second.start()
        // Spread over count ÷ (count / 5) = 5 s: about a fifth of the claims in each second.
        await virtual.advance(by: .seconds(1))
        let afterOne = try await second.count()
        #expect(afterOne > count * 7 / 10 && afterOne < count * 9 / 10, "\(count - afterOne) of \(count) claimed in the first second")
        await virtual.advance(by: .seconds(4))
        #expect(try await second.count() == 0, "none left")
        #expect(log.count == count / 2 && log.all.allSatisfy { $0.payload == "once" }, "the within(1 min) one-shots were removed unrun; every once ran")
        #expect(Set(log.all.map(\.fire.key)).count == count / 2)
        await second.shutdown()
    }

    /// Options that arm at most 10 timers and claim overdue ones 10 a second, telling `loads` how
    /// many timers each load of the horizon read.
    func pieceOptions(_ loads: Locked<[Int]>, _ change: (inout DurableTimers.Options) -> Void = { _ in }) -> DurableTimers.Options {
        exactOptions { options in
            options.maximumArmed = 10
            options.catchUpRate = 10
            options.onEvent = { event in
                if case .loaded(.horizon, let timers, _) = event { loads.withLock { $0.append(timers) } }
            }
            change(&options)
        }
    }

    /// Leaves 25 one-shots (`k00`…`k24`, due a tenth of a second apart) overdue in `database`:
    /// scheduled, then an hour of downtime.
    func leaveOverdue(_ database: TemporaryDatabase, _ virtual: VirtualClock, log: FireLog, options: DurableTimers.Options) async throws {
        let first = try await runner(database, virtual, log: log, options: options)
        #expect(
            try await first.schedule(
                (0..<25).map { (key: String(format: "k%02d", $0), at: at(1 + Double($0) / 10), payload: Note(text: "x")) }, handler: "note")
                == 25)
        await first.shutdown()
        await virtual.advance(by: .seconds(3_600))
    }

    @Test(
        "C2, C6, C16: a horizon larger than one load arms (25 timers due ahead, 10 a load) is loaded in pieces, the next when the last one of a piece comes due and fewer than half a piece is held, and each timer runs once, on time"
    )
    func horizonLoadsInPieces() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let loads = Locked<[Int]>([])
        let timers = try await runner(database, virtual, log: log, options: pieceOptions(loads))
        #expect(
            try await timers.schedule(
                (0..<25).map { (key: String(format: "k%02d", $0), at: at(10 + Double($0) / 10), payload: Note(text: "x")) }, handler: "note")
                == 25)
        await timers.start()
        #expect(loads.withLock { $0 } == [10])
        await virtual.advance(by: .seconds(10.8))
        #expect(loads.withLock { $0 } == [10], "no load before the piece's last timer is due")
        // The last of the piece is due at 10.9 s (10.900000096 as a Date's Double holds it).
        await virtual.advance(by: .milliseconds(150))
        #expect(loads.withLock { $0 } == [10, 10], "the second piece when the first one's last timer comes due")
        await virtual.advance(by: .seconds(1))
        // The last five — and k19 again when its claim, made at the same instant, came first
        // (a claimed row is ready at its lease's end, which the horizon reaches).
        let third = loads.withLock { $0 }
        #expect(third.count == 3 && third.prefix(2) == [10, 10] && (5...6).contains(third[2]), "\(third)")
        await virtual.advance(by: .seconds(1))
        #expect(log.count == 25 && Set(log.all.map(\.fire.key)).count == 25)
        #expect(log.all.allSatisfy { $0.fire.firedAt == $0.fire.scheduledDeadline }, "each on time")
        #expect(try await timers.count() == 0)
        await timers.shutdown()
    }

    @Test(
        "C6, C16: a backlog is swept, not loaded: 25 overdue timers after downtime are claimed the earliest first at the catch-up rate (10 a second), no load of the horizon reads them, and each runs once"
    )
    func backlogIsSwept() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let loads = Locked<[Int]>([])
        let options = pieceOptions(loads)
        try await leaveOverdue(database, virtual, log: log, options: options)
        let second = try await runner(database, virtual, log: log, options: options)
        await second.start()
        await virtual.advance(by: .zero)
        #expect(loads.withLock { $0 } == [0], "overdue timers are not armed one by one")
        // Before: each overdue key was armed in memory (a million after a long downtime) at an
        // offset of its key, and every instance chased every key.
        #expect(log.count <= 1)
        await virtual.advance(by: .seconds(1))
        #expect(log.count >= 9 && log.count <= 12, "about 10 in the first second: \(log.count)")
        await virtual.advance(by: .seconds(2))
        #expect(log.count == 25 && Set(log.all.map(\.fire.key)).count == 25)
        #expect(log.all.map(\.fire.key) == (0..<25).map { String(format: "k%02d", $0) }, "the earliest first")
        #expect(log.all.allSatisfy { $0.fire.attempt == 1 })
        #expect(try await second.count() == 0)
        await second.shutdown()
    }

    @Test(
        "C16: a backlog that drains slower than it is swept (handlers of 5 s, two at a time): the runner holds only the timers its handler slots run (and their ends being written), and every timer runs once"
    )
    func backlogHeldBySlots() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let loads = Locked<[Int]>([])
        let options = pieceOptions(loads) { $0.maxConcurrentHandlers = 2 }
        try await leaveOverdue(database, virtual, log: log, options: options)
        let second = try DurableTimers(path: database.path, clock: virtual.clock, options: options)
        try await second.register("note", payload: Note.self) { note, fire in
            try await Task.sleep(for: .seconds(5), clock: virtual.clock)
            log.append(note.text, fire)
        }
        await second.start()
        var most = 0
        for _ in 0..<70 {
            await virtual.advance(by: .seconds(1))
            most = max(most, second.runner.retained.occurrences)
        }
        // Before: the backlog's keys were held in pieces of maximumArmed (10), whatever the slots.
        #expect(most <= 4, "the two running, and at most two whose end is being written: \(most)")
        #expect(log.count == 25 && Set(log.all.map(\.fire.key)).count == 25)
        #expect(try await second.count() == 0)
        await second.shutdown()
    }

    @Test(
        "C6, C14: two runners share one backlog without racing: each overdue timer is claimed once (attempt 1, no refused claim), both take a share, none is lost"
    )
    func runnersDivideABacklog() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let claims = Locked<(requested: Int, claimed: Int)>((0, 0))
        let options = exactOptions { options in
            options.catchUpRate = 100
            options.maxConcurrentHandlers = 4
            options.onEvent = { event in
                if case .claimed(let requested, let claimed) = event { claims.withLock { $0 = ($0.requested + requested, $0.claimed + claimed) } }
            }
        }
        let first = try await runner(database, virtual, log: log, options: options)
        #expect(try await first.schedule((0..<200).map { (key: "k\($0)", at: at(1), payload: Note(text: "x")) }, handler: "note") == 200)
        await first.shutdown()
        await virtual.advance(by: .seconds(600))
        let owners = Locked<[String: Int]>([:])
        func instance(_ name: String) async throws -> DurableTimers {
            let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: options)
            try await timers.register("note", payload: Note.self) { note, fire in
                owners.withLock { $0[name, default: 0] += 1 }
                log.append(note.text, fire)
            }
            return timers
        }
        let (a, b) = (try await instance("a"), try await instance("b"))
        await a.start()
        await b.start()
        await virtual.advance(by: .seconds(3))
        #expect(log.count == 200 && Set(log.all.map(\.fire.key)).count == 200)
        #expect(log.all.allSatisfy { $0.fire.attempt == 1 })
        let (requested, claimed) = claims.withLock { $0 }
        #expect(requested == claimed && claimed == 200, "claim attempts per claim: \(requested) for \(claimed)")
        #expect(owners.withLock { $0.values.allSatisfy { $0 >= 50 } && $0.count == 2 }, "\(owners.withLock { $0 })")
        await a.shutdown()
        await b.shutdown()
    }

    @Test("A runner keeps nothing for a timer that has run: after 200 one-shots fire, it holds no wake-up and no occurrence")
    func nothingRetainedAfterFires() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual, log: log)
        await timers.start()
        _ = try await timers.schedule((0..<200).map { (key: "k\($0)", at: at(1 + Double($0) / 100), payload: Note(text: "x")) }, handler: "note")
        #expect(timers.runner.retained.wakeUps == 200)
        await virtual.advance(by: .seconds(5))
        #expect(log.count == 200)
        // Before: the wake-up of every timer that had fired stayed in the runner's map for good —
        // about 350 bytes a fire (RSS +200 MB draining a backlog of a million).
        #expect(timers.runner.retained.wakeUps == 0 && timers.runner.retained.occurrences == 0, "\(timers.runner.retained)")
        await timers.shutdown()
    }

    @Test(
        "At least once: a handler that throws is retried with a doubling delay and the same idempotency key, then parked as failed with its error; retry(key:) schedules it again"
    )
    func retriesThenParks() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let attempts = FireLog()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions { $0.maxAttempts = 3 })
        struct Failure: Error, CustomStringConvertible { var description: String { "the payment service said no" } }
        try await timers.register("charge", payload: Note.self) { note, fire in
            attempts.append(note.text, fire)
            throw Failure()
        }
        await timers.start()
        try await timers.schedule(key: "invoice/7", at: at(10), handler: "charge", payload: Note(text: "7"))
        await virtual.advance(by: .seconds(10))
        await virtual.advance(by: .seconds(1))  // attempt 2, one second later
        await virtual.advance(by: .seconds(2))  // attempt 3, two seconds after that
        await virtual.advance(by: .seconds(60))
        #expect(attempts.all.map(\.fire.attempt) == [1, 2, 3])
        #expect(attempts.all.map { seconds($0.fire.firedAt) } == [10, 11, 13])
        #expect(Set(attempts.all.map(\.fire.idempotencyKey)).count == 1)
        let parked = try #require(try await timers.timer(key: "invoice/7"))
        #expect(parked.state == .failed && parked.lastError == "the payment service said no" && parked.attempts == 3)
        try await timers.retry(key: "invoice/7")
        await virtual.advance(by: .zero)
        #expect(attempts.count == 4 && attempts.all.last?.fire.attempt == 1)
        await timers.shutdown()
    }

    @Test("A timer whose handler is not registered waits as an orphan, untouched; registering the handler runs it")
    func orphansWait() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let writer = try await runner(database, virtual, log: log)
        try await writer.register("sale.end", payload: Note.self) { _, _ in }
        try await writer.schedule(key: "sale/42", at: at(5), handler: "sale.end", payload: Note(text: "42"))
        await writer.shutdown()
        let reader = try await runner(database, virtual, log: log)
        await reader.start()
        await virtual.advance(by: .seconds(60))
        #expect(log.count == 0)
        let orphans = try await reader.orphans()
        #expect(orphans.map(\.key) == ["sale/42"] && orphans.first?.state == .orphaned)
        try await reader.register("sale.end", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await virtual.advance(by: .zero)
        #expect(log.all.map(\.payload) == ["42"] && log.all.first?.fire.lateness == .seconds(55))
        #expect(try await reader.orphans().isEmpty)
        await reader.shutdown()
    }

    @Test("A stored payload that does not decode as the handler's type parks the timer with the reason; the handler never runs with a wrong value")
    func payloadThatDoesNotDecode() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let writer = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        try await writer.register("count", payload: String.self) { _, _ in }
        try await writer.schedule(key: "c", at: at(1), handler: "count", payload: "not a number")
        await writer.shutdown()
        let ran = FireLog()
        let reader = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        try await reader.register("count", payload: Int.self) { value, fire in ran.append("\(value)", fire) }
        await reader.start()
        await virtual.advance(by: .seconds(5))
        #expect(ran.count == 0)
        let parked = try #require(try await reader.timer(key: "c"))
        #expect(parked.state == .failed && parked.lastError?.hasPrefix("the payload does not decode as the handler's type") == true)
        await reader.shutdown()
    }

    @Test("A claim whose runner died is taken over once its lease expires: the handler runs again with attempt 2 and the same idempotency key")
    func leaseExpiryAfterACrash() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual, log: log, options: exactOptions { $0.lease = .seconds(30) })
        try await timers.schedule(key: "k", at: at(10), handler: "note", payload: Note(text: "x"))
        // Another runner claimed it at 10 s and died without finishing.
        await virtual.advance(by: .seconds(10))
        let claimed = try #require(
            try await timers.store.claim(
                namespace: "default", key: "k", owner: "dead", now: epoch + 10_000_000_000, leaseUntil: epoch + 40_000_000_000, early: false
            ).record)
        #expect(try await timers.timer(key: "k")?.state == .running)
        await timers.start()
        await virtual.advance(by: .seconds(29))
        #expect(log.count == 0, "the lease holds")
        await virtual.advance(by: .seconds(1))
        let fire = try #require(log.all.first?.fire)
        #expect(log.count == 1 && fire.attempt == 2 && fire.sequence == claimed.sequence && seconds(fire.firedAt) == 40)
        // The dead runner, back, cannot complete what it no longer holds.
        #expect(try await !timers.store.finish(namespace: "default", key: "k", owner: "dead", sequence: claimed.sequence, outcome: .delete))
        await timers.shutdown()
    }

    @Test(
        "C6: a key another runner holds is tried once and forgotten, not armed again at its lease's end; when the holder died, the occurrence is taken over once the lease lapses (attempt 2, the same sequence)"
    )
    func heldKeyIsLookedAtOnce() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let claims = Locked<[(requested: Int, claimed: Int)]>([])
        let options = exactOptions { options in
            options.lease = .seconds(30)
            options.onEvent = { event in
                // Claims of keys and sweeps that took something (a sweep that found nothing is 0/0).
                if case .claimed(let requested, let claimed) = event, requested > 0 { claims.withLock { $0.append((requested, claimed)) } }
            }
        }
        let timers = try await runner(database, virtual, log: log, options: options)
        try await timers.schedule(key: "k", at: at(10), handler: "note", payload: Note(text: "x"))
        await timers.start()
        // Another runner claims it just before its time (a manual fire: early) and dies.
        await virtual.advance(by: .seconds(9.5))
        let held = try #require(
            try await timers.store.claim(
                namespace: "default", key: "k", owner: "dead", now: epoch + 9_500_000_000, leaseUntil: epoch + 39_500_000_000, early: true
            ).record)
        await virtual.advance(by: .seconds(1))
        #expect(claims.withLock { $0.map(\.requested) } == [1] && claims.withLock { $0.map(\.claimed) } == [0], "tried once at 10 s, found held")
        #expect(timers.runner.retained.occurrences == 0, "nothing kept for a key another runner runs")
        await virtual.advance(by: .seconds(28))
        #expect(log.count == 0 && claims.withLock { $0.count } == 1, "no claim while the lease holds")
        // Before: armed again at the lease's end by the failed claim itself — a second failed
        // claim per fire whenever the holder lived (every fire of a fleet whose instances race
        // for each key). Now a refill of the horizon (every half horizon) or, past it, a look a
        // second after the lease's end finds a claim that lapsed.
        await virtual.advance(by: .seconds(2))
        let fire = try #require(log.all.first?.fire)
        #expect(log.count == 1 && fire.attempt == 2 && fire.sequence == held.sequence)
        #expect(seconds(fire.firedAt) >= 39.5 && seconds(fire.firedAt) <= 40, "at the lease's end: \(seconds(fire.firedAt))")
        await timers.shutdown()
    }

    @Test(
        "A long handler keeps its claim: the lease is renewed every third of it while the handler runs, so no other runner can take the occurrence; it completes once"
    )
    func longHandlerRenewsItsLease() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions { $0.lease = .seconds(30) })
        try await timers.register("long", payload: Note.self) { note, fire in
            try await Task.sleep(for: .seconds(100), clock: virtual.clock)
            log.append(note.text, fire)
        }
        await timers.start()
        try await timers.schedule(key: "k", at: at(10), handler: "long", payload: Note(text: "long"))
        await virtual.advance(by: .seconds(10))
        for probe in [45, 75, 105] {
            await virtual.advance(to: TimerInstant(kind: .virtual, nanoseconds: epoch + Int64(probe) * 1_000_000_000))
            let now = virtual.now.nanoseconds
            let stolen = try await timers.store.claim(namespace: "default", key: "k", owner: "other", now: now, leaseUntil: now + 30_000_000_000, early: false)
            #expect(stolen.record == nil, "the lease still holds at \(probe) s, past the first lease's end")
        }
        await virtual.advance(by: .seconds(10))
        #expect(log.all.map(\.payload) == ["long"] && log.all.first?.fire.attempt == 1)
        #expect(try await timers.timer(key: "k") == nil, "completed by its own claim")
        await timers.shutdown()
    }

    @Test("run() fires until its task is cancelled, then shuts down gracefully")
    func runUntilCancelled() async throws {
        let database = try TemporaryDatabase()
        let log = FireLog()
        let timers = try DurableTimers(path: database.path, options: exactOptions())
        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        try await timers.schedule(key: "now", after: .zero, handler: "note", payload: Note(text: "now"))
        try await timers.schedule(key: "later", after: .seconds(3600), handler: "note", payload: Note(text: "later"))
        let running = Task { await timers.run() }
        #expect(await eventually { log.count == 1 })
        running.cancel()
        await running.value
        #expect(try await timers.schedule(key: "after", after: .zero, handler: "note", payload: Note(text: "after")))
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.all.map(\.payload) == ["now"], "nothing fires once run() has returned")
        #expect(try await timers.count() == 2)
    }

    @Test(
        "Schedule by key: replace, keep and fail under a key in use; cancel says what it found; reschedule and postpone move the next occurrence; fire(key:) runs it now, a one-shot then ends"
    )
    func keys() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try await runner(database, virtual, log: log)
        await timers.start()
        #expect(try await timers.schedule(key: "a", at: at(10), handler: "note", payload: Note(text: "first")))
        #expect(try await !timers.schedule(key: "a", at: at(20), handler: "note", payload: Note(text: "kept out"), ifExists: .keep))
        await #expect(throws: DurableTimerError.keyInUse("a")) {
            try await timers.schedule(key: "a", at: at(20), handler: "note", payload: Note(text: "refused"), ifExists: .fail)
        }
        #expect(try await timers.schedule(key: "a", at: at(15), handler: "note", payload: Note(text: "replacement")))
        try await timers.postpone(key: "a", by: .seconds(5))
        #expect(try await timers.timer(key: "a").map { seconds($0.nextDeadline) } == 20)
        try await timers.schedule(key: "b", at: at(12), handler: "note", payload: Note(text: "b"))
        try await timers.reschedule(key: "b", at: at(30))
        try await timers.schedule(key: "c", at: at(50), handler: "note", payload: Note(text: "c"))
        #expect(try await timers.cancel(key: "c") == .cancelled)
        #expect(try await timers.cancel(key: "c") == .notFound)
        try await timers.schedule(key: "d", every: .seconds(100), first: at(100), handler: "note", payload: Note(text: "d"))
        #expect(try await timers.fire(key: "d"))
        #expect(try await !timers.fire(key: "nothing"))
        await virtual.advance(by: .seconds(60))
        #expect(log.all.map(\.payload) == ["d", "replacement", "b"])
        #expect(log.all.map { seconds($0.fire.firedAt) } == [0, 20, 30])
        #expect(log.all[0].fire.isManual)
        #expect(try await timers.timer(key: "d").map { seconds($0.nextDeadline) } == 100, "a manual fire keeps the grid")
        await timers.shutdown()
    }

    @Test("Namespaces share a file without seeing each other's timers")
    func namespaces() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let shop = try DurableTimers(path: database.path, namespace: "shop", clock: virtual.clock, options: exactOptions())
        let mail = try DurableTimers(path: database.path, namespace: "mail", clock: virtual.clock, options: exactOptions())
        for timers in [shop, mail] { try await timers.register("note", payload: Note.self) { _, _ in } }
        try await shop.schedule(key: "k", at: at(1), handler: "note", payload: Note(text: "shop"))
        try await mail.schedule(key: "k", at: at(2), handler: "note", payload: Note(text: "mail"))
        #expect(try await shop.timers().map { seconds($0.nextDeadline) } == [1])
        #expect(try await mail.timers().map { seconds($0.nextDeadline) } == [2])
        #expect(try await shop.cancel(key: "k") == .cancelled)
        #expect(try await mail.count() == 1)
    }

    @Test("A graceful shutdown lets the handler under way finish and complete its timer; nothing new starts")
    func gracefulShutdown() async throws {
        let database = try TemporaryDatabase()
        let log = FireLog()
        let timers = try DurableTimers(path: database.path, options: exactOptions())
        let release = AsyncGate()
        try await timers.register("slow", payload: Note.self) { note, fire in
            await release.wait()
            log.append(note.text, fire)
        }
        await timers.start()
        try await timers.schedule(key: "slow", after: .zero, handler: "slow", payload: Note(text: "slow"))
        try await timers.schedule(key: "never", after: .seconds(3600), handler: "slow", payload: Note(text: "never"))
        #expect(await eventually { timers.runner.isRunning("slow") })
        let shutdown = Task { await timers.shutdown() }
        try await Task.sleep(for: .milliseconds(50))
        release.open()
        await shutdown.value
        #expect(log.all.map(\.payload) == ["slow"])
        #expect(try await timers.timer(key: "slow") == nil, "completed before shutdown returned")
        #expect(try await timers.timer(key: "never") != nil)
    }
}

/// A gate that tasks wait at until it is opened.
final class AsyncGate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = lock.withLock {
                if isOpen { return true }
                waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiting = lock.withLock {
            isOpen = true
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiting { waiter.resume() }
    }
}

/// Polls `condition` every 5 ms for at most a minute: a liveness bound, not a speed claim. It
/// returns as soon as the condition holds; under ThreadSanitizer on two cores, with the rest of the
/// suite in parallel, a runner's first fire once took more than 10 s to be served.
func eventually(_ condition: () async throws -> Bool) async rethrows -> Bool {
    try await eventually(within: .seconds(60), condition)
}

/// ``eventually(_:)`` for at most `limit`.
func eventually(within limit: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}
