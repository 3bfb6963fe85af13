import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// What an operator sees and does, on both stores, exactly on the virtual clock: the run history,
/// pauses (a key, a handler, the namespace), why a timer has not fired, its plan, and the counts.
@Suite("Durable timers: history, pauses, why, plan and stats")
struct DurableOperatingTests {
    @Test(
        "C7: the history answers 'did it fire, when, how late, where' after a one-shot is gone; failures and the retry that succeeded are each a run; a repeating timer keeps its last runs only",
        arguments: StoreKind.allCases)
    func history(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let trace = RunnerTrace(virtual)
        let timers = try DurableTimers(
            store: store, namespace: namespace, clock: virtual.clock,
            options: trace.recording(exactOptions { $0.history = DurableTimers.History(runsPerTimer: 3) }))
        try await timers.register("note", payload: Note.self) { note, fire in
            struct Failed: Error, CustomStringConvertible { var description: String { "boom" } }
            if note.text == "flaky", fire.attempt == 1 { throw Failed() }
        }
        await timers.start()
        try await timers.schedule(key: "once", at: at(10), handler: "note", payload: Note(text: "once"))
        try await timers.schedule(key: "flaky", at: at(10), handler: "note", payload: Note(text: "flaky"))
        try await timers.schedule(key: "tick", every: .seconds(5), first: at(5), handler: "note", payload: Note(text: "tick"))
        // Five steps of 5 s, each once its fires are written: "tick" runs at 5, 10, 15, 20 and 25.
        // From the third on, a claim the loaded machine could not answer in time waits for a
        // retry or a lease on the virtual clock, which only the test moves: the wait moves it a
        // second at a time (the grid's dues below do not depend on it).
        // The first two reach their instant (nudged there until "tick" ran: its next occurrence is
        // armed once the last run's end is written, which may be after the clock got there).
        for step in 1...5 {
            let fired = { try await timers.timer(key: "tick")?.fireCount ?? 0 >= Int64(step) }
            if step <= 2 {
                #expect(try await virtual.reach(Double(5 * step), until: fired))
            } else {
                await virtual.advance(by: .seconds(5))
                #expect(try await eventuallyMoving(virtual, fired))
            }
            if step == 2 { #expect(try await virtual.reach(10) { try await timers.timer(key: "once") == nil }) }
        }
        #expect(try await eventuallyMoving(virtual) { try await timers.timer(key: "flaky") == nil }, "its retry succeeded")

        let once = try await timers.history(key: "once")
        #expect(once.count == 1)
        #expect(once.first?.outcome == .succeeded && once.first?.attempt == 1 && once.first?.lateness == .zero)
        #expect(once.first?.due == at(10) && once.first?.instance == timers.instance && once.first?.error == nil)
        let flaky = try await timers.history(key: "flaky")
        #expect(flaky.map(\.outcome) == [.succeeded, .failed], "newest first; \(trace)")
        #expect(flaky.map(\.attempt) == [2, 1])
        #expect(flaky.last?.error == "boom" && flaky.last?.lateness == .zero)
        #expect(flaky.first.map { $0.lateness >= .seconds(1) && $0.due == at(10) } == true, "the retry came after its delay, for the same occurrence")

        let ticks = try await timers.history(key: "tick", limit: 100)
        let newest = try #require(ticks.first?.due)
        #expect(newest >= at(25))
        #expect(ticks.map(\.due) == [newest, newest - 5, newest - 10], "the last three runs only, on the grid")
        #expect(try await timers.timer(key: "tick")?.lastRun?.due == newest)
        await timers.shutdown()
        await store.close()
    }

    /// ``eventually(_:)``, moving the virtual clock a second after each 5 s of real time that
    /// `condition` did not hold (at most 120 s): a claim whose answer a loaded machine lost waits
    /// for a retry or for its lease, on the virtual clock.
    private func eventuallyMoving(_ virtual: VirtualClock, _ condition: () async throws -> Bool) async rethrows -> Bool {
        for _ in 0..<120 {
            let end = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < end {
                if try await condition() { return true }
                try? await Task.sleep(for: .milliseconds(5))
            }
            await virtual.advance(by: .seconds(1))
        }
        return try await condition()
    }

    @Test(
        "History pruning keeps up: a heartbeat removes every run past the history's age, batch after batch (one batch of 5,000 a beat fell behind any rate over 167 runs a second), and keeps the newer ones",
        arguments: StoreKind.allCases)
    func pruningKeepsUp(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        // 12,000 runs that ended at the epoch (older than a minute by the time the runner starts),
        // and 10 that end later: more than two batches' worth to prune at one beat.
        try await kind.insertRuns(file: file, namespace: namespace, count: 12_000, endedAt: epoch)
        try await kind.insertRuns(file: file, namespace: namespace, count: 10, endedAt: epoch + 3_590_000_000_000, prefix: "recent")
        #expect(try await kind.runCount(file: file, namespace: namespace) == 12_010)
        let virtual = makeVirtualClock()
        await virtual.advance(by: .seconds(3_600))
        let timers = try DurableTimers(
            store: store, namespace: namespace, clock: virtual.clock, options: exactOptions { $0.history = DurableTimers.History(maxAge: .seconds(60)) })
        await timers.start()
        // The first beat comes as the runner starts.
        #expect(try await eventually { try await kind.runCount(file: file, namespace: namespace) == 10 }, "aged runs left after a beat")
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "C10: postpone is fenced by the occurrence it read: twenty postpones of a second made at once move the timer twenty seconds (each read-then-move had lost the others' delays)",
        arguments: StoreKind.allCases)
    func concurrentPostponesAddUp(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        try await timers.schedule(key: "sale", at: at(100), handler: "note", payload: Note(text: "sale"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { try await timers.postpone(key: "sale", by: .seconds(1)) } }
            try await group.waitForAll()
        }
        #expect(try await timers.timer(key: "sale")?.nextDeadline == at(120))
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "C17: a key given twice in one batch is one timer on every store: replace stores its last entry, keep its first, fail refuses the batch with keyInUse and writes nothing (PostgreSQL had failed with its raw error 21000)",
        arguments: StoreKind.allCases)
    func keyTwiceInABatch(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let timers = try DurableTimers(store: store, namespace: namespace, clock: makeVirtualClock().clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        let batch = [
            (key: "a", at: at(10), payload: Note(text: "first")), (key: "b", at: at(10), payload: Note(text: "b")),
            (key: "a", at: at(20), payload: Note(text: "last"))
        ]
        #expect(try await timers.schedule(batch, handler: "note", ifExists: .replace) == 2)
        #expect(try await timers.timer(key: "a")?.nextDeadline == at(20))
        try await timers.cancel(key: "a")
        #expect(try await timers.schedule(batch, handler: "note", ifExists: .keep) == 1, "b is stored already")
        #expect(try await timers.timer(key: "a")?.nextDeadline == at(10))
        try await timers.cancel(key: "a")
        try await timers.cancel(key: "b")
        await #expect(throws: DurableTimerError.keyInUse("a")) { try await timers.schedule(batch, handler: "note", ifExists: .fail) }
        #expect(try await timers.count() == 0)
        await timers.shutdown()
        await store.close()
    }

    @Test("History off (History.off) records no run", arguments: StoreKind.allCases)
    func historyOff(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions { $0.history = .off })
        try await timers.register("note", payload: Note.self) { _, _ in }
        await timers.start()
        try await timers.schedule(key: "once", at: at(1), handler: "note", payload: Note(text: "x"))
        await virtual.advance(by: .seconds(1))
        #expect(try await eventually { try await timers.timer(key: "once") == nil })
        #expect(try await timers.history(key: "once").isEmpty)
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "C6: a paused repeating timer does not fire, keeps its grid, and at resume its misfire policy decides for the occurrences it missed; a paused one-shot fires once resumed",
        arguments: StoreKind.allCases)
    func pauseKey(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let trace = RunnerTrace(virtual)
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: trace.recording(exactOptions()))
        let log = FireLog()
        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await timers.start()
        try await timers.schedule(key: "tick", every: .seconds(10), first: at(10), handler: "note", payload: Note(text: "tick"), misfire: .once)
        try await timers.schedule(key: "once", at: at(15), handler: "note", payload: Note(text: "once"))
        await virtual.advance(by: .seconds(10))
        #expect(try await eventually { try await timers.timer(key: "tick")?.fireCount == 1 })
        #expect(try await timers.pause(key: "tick"))
        #expect(try await timers.pause(key: "once"))
        #expect(try await !timers.pause(key: "nothing"), "no timer under the key")
        #expect(try await timers.timer(key: "tick")?.state == .paused)
        #expect(try await timers.timers(matching: DurableTimerQuery(statuses: [.paused])).timers.map(\.key) == ["once", "tick"])
        for _ in 0..<7 { await virtual.advance(by: .seconds(5)) }  // 45: occurrences 20, 30 and 40 came, and "once" at 15
        #expect(log.count == 1, "nothing fired while paused")
        #expect(try await timers.timer(key: "tick")?.nextDeadline == at(20))
        #expect(try await timers.timer(key: "once")?.state == .paused)
        // Claims of the paused keys that the moves above started (each refused: paused) have all
        // come back: a claim still in flight holds the reading of the moment it was sent, and on a
        // loaded machine one once landed after the resume, firing the timer "at 35". A key that
        // came back with a ready time learned while it was claiming is armed again for an instant
        // the clock has passed, which runs at the clock's next move: the wait nudges the clock at
        // 45 (a move of zero) until that claim is refused too and nothing is held.
        #expect(
            await eventually {
                await virtual.advance(by: .zero)
                return timers.runner.retained.occurrences == 0
            }, "held: \(timers.occurrencePhases); \(trace)")
        #expect(try await timers.resume(key: "tick"))
        #expect(try await timers.resume(key: "once"))
        #expect(try await !timers.resume(key: "once"), "not paused any more")
        // Their wake-ups are armed for instants the virtual clock has passed: it runs them at its next
        // move, nudged at 45 until they ran.
        #expect(await virtual.reach(45) { log.count == 3 })
        let tick = try #require(log.all.first { $0.payload == "tick" && $0.fire.scheduledDeadline == at(20) })
        #expect(tick.fire.deadlineCount == 3, "once: one run stands for 20, 30 and 40")
        #expect(log.all.contains { $0.payload == "once" })
        #expect(try await eventually { try await timers.timer(key: "tick")?.fireCount == 2 })
        #expect(try await timers.timer(key: "tick")?.nextDeadline == at(50), "the grid is kept")
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "Pausing a handler holds its timers and those scheduled for it meanwhile, on every instance, while other handlers fire; resuming runs them; a namespace pause holds every handler until it is lifted",
        arguments: StoreKind.allCases)
    func pauseHandlerAndNamespace(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        // A second instance on the same store: the pause is stored, so it obeys too.
        let other = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        let log = FireLog()
        for runner in [timers, other] {
            try await runner.register("mail", payload: Note.self) { note, fire in log.append(note.text, fire) }
            try await runner.register("sms", payload: Note.self) { note, fire in log.append(note.text, fire) }
            await runner.start()
        }
        for index in 0..<5 { try await timers.schedule(key: "mail-\(index)", at: at(10), handler: "mail", payload: Note(text: "mail")) }
        #expect(try await timers.pause(handler: "mail") == 5)
        try await timers.schedule(key: "mail-late", at: at(10), handler: "mail", payload: Note(text: "mail"))
        try await timers.schedule(key: "sms-0", at: at(10), handler: "sms", payload: Note(text: "sms"))
        #expect(try await timers.timer(key: "mail-late")?.state == .paused, "scheduled while its handler is paused")
        #expect(try await timers.pauses().handlers.keys.sorted() == ["mail"])
        #expect(await virtual.reach(20) { log.count == 1 })
        #expect(log.all.map(\.payload) == ["sms"])
        #expect(try await timers.resume(handler: "mail") == 6)
        // The resumed timers are armed when the instances hear of the resume, and a claim of a
        // paused key refused before it may come back after: nudged at 20 until all have run.
        #expect(await virtual.reach(20) { log.count == 7 })
        // Their ends written (a handler's start is logged before its end is): the namespace's pause
        // below then holds "sms-1" alone.
        #expect(try await eventually { try await timers.count() == 0 })

        try await timers.schedule(key: "sms-1", at: at(30), handler: "sms", payload: Note(text: "sms"))
        try await timers.pauseNamespace()
        #expect(try await timers.resume(handler: "sms") == 0, "a handler's timers stay paused while the namespace is")
        await virtual.advance(by: .seconds(15))
        #expect(log.count == 7)
        #expect(try await timers.why(key: "sms-1").reasons.first == .paused(.namespace))
        #expect(try await timers.resumeNamespace() == 1)
        #expect(await virtual.reach(35) { log.count == 8 })
        for runner in [timers, other] { await runner.shutdown() }
        await store.close()
    }

    @Test(
        "why(key:) names each reason a timer has not fired: not due yet, paused, parked, running on an instance, retrying, orphan, no instance, due with live runners, gone with its last run",
        arguments: StoreKind.allCases)
    func why(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        // A runner that never starts: no instance is alive.
        let idle = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await idle.register("work", payload: Note.self) { _, _ in }
        try await idle.register("lost", payload: Note.self) { _, _ in }
        try await idle.schedule(key: "later", at: at(100), handler: "work", payload: Note(text: "x"))
        try await idle.schedule(key: "waiting", at: at(0), handler: "work", payload: Note(text: "x"))
        #expect(try await idle.why(key: "later").reasons == [.notDueYet(at: at(100), in: .seconds(100)), .noInstance])
        #expect(try await idle.why(key: "waiting").reasons == [.noInstance])
        #expect(try await idle.why(key: "missing").reasons == [.notFound])

        let timers = try DurableTimers(
            store: store, namespace: namespace, clock: virtual.clock,
            options: exactOptions {
                $0.maxAttempts = 2
                $0.lease = .seconds(3_600)
            })
        let started = AsyncGate()
        let finish = AsyncGate()
        try await timers.register("work", payload: Note.self) { note, fire in
            struct Failed: Error {}
            switch note.text {
            case "hold":
                started.open()
                await finish.wait()
            case "fail": throw Failed()
            default: break
            }
        }
        await timers.start()
        #expect(try await eventually { try await timers.timer(key: "waiting") == nil }, "the live runner took it")
        #expect(try await timers.why(key: "waiting").lastRun?.outcome == .succeeded, "gone, with its last run")
        try await idle.schedule(key: "orphan", at: at(1), handler: "lost", payload: Note(text: "x"))
        try await timers.schedule(key: "held", at: at(1), handler: "work", payload: Note(text: "hold"))
        try await timers.schedule(key: "failing", at: at(1), handler: "work", payload: Note(text: "fail"))
        try await timers.schedule(key: "paused", at: at(1), handler: "work", payload: Note(text: "x"))
        try await timers.pause(key: "paused")
        await virtual.advance(by: .seconds(1))
        await started.wait()
        #expect(try await eventually { try await timers.timer(key: "failing")?.lastError != nil })

        #expect(try await timers.why(key: "orphan").reasons == [.orphan(handler: "lost")])
        #expect(try await timers.why(key: "paused").reasons == [.paused(.key)])
        let held = try await timers.why(key: "held").reasons
        #expect(held == [.running(instance: timers.instance, until: at(3_601), instanceAlive: true)])
        let failing = try await timers.why(key: "failing")
        #expect(failing.reasons == [.retrying(attempt: 1, at: at(2), error: failing.timer?.lastError)])
        #expect(failing.lastRun?.outcome == .failed)
        #expect(try await virtual.reach(2) { try await timers.timer(key: "failing")?.state == .failed })
        let parkedError = try #require(try await timers.timer(key: "failing")?.lastError)
        let parkedWhy = try await timers.why(key: "failing")
        #expect(parkedWhy.reasons == [.parked(error: parkedError)])
        // An instance recorded alive with the handler, that does not claim: "due", naming it.
        let stuck = DurableInstance(
            namespace: namespace, id: "stuck", host: "elsewhere", processID: 1, handlers: ["lost"], started: epoch, seen: virtual.clock.now.nanoseconds,
            interval: 30_000_000_000)
        try await store.heartbeat(stuck)
        let orphan = try await timers.why(key: "orphan")
        #expect(orphan.reasons == [.due(for: .seconds(1), instances: ["stuck"])])
        #expect(orphan.description.contains("stuck"))
        finish.open()
        await timers.shutdown()
        #expect(try await timers.instances().map(\.id) == ["stuck"], "a runner that shuts down removes its record")
        await store.close()
    }

    @Test(
        "runNow(key:) runs a timer's next occurrence now on the instance that claims it — a repeating one keeps its grid, a one-shot ends — and refuses a parked, paused or missing one",
        arguments: StoreKind.allCases)
    func runNow(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let log = FireLog()
        // Scheduled through one runner; run by another, as an operator's tool and a worker would.
        let tool = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await tool.register("note", payload: Note.self) { _, _ in }
        let worker = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await worker.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await worker.start()
        try await tool.schedule(key: "tick", every: .seconds(60), first: at(60), handler: "note", payload: Note(text: "tick"))
        try await tool.schedule(key: "once", at: at(100), handler: "note", payload: Note(text: "once"))
        try await tool.schedule(key: "held", at: at(100), handler: "note", payload: Note(text: "held"))
        try await tool.pause(key: "held")
        await virtual.advance(by: .seconds(10))
        #expect(try await tool.runNow(key: "tick"))
        #expect(try await tool.runNow(key: "once"))
        #expect(try await !tool.runNow(key: "held"), "paused")
        #expect(try await !tool.runNow(key: "missing"))
        // The worker hears of it (PostgreSQL: NOTIFY) or finds it at its next load (SQLite).
        await worker.runner.refill()
        await virtual.advance(by: .zero)
        #expect(await eventually { log.count == 2 })
        let tick = try #require(log.all.first { $0.payload == "tick" })
        #expect(tick.fire.scheduledDeadline == at(60) && tick.fire.deadlineCount == 1, "it stands for its next occurrence")
        #expect(try await eventually { try await tool.timer(key: "tick")?.nextDeadline == at(120) }, "the grid is kept")
        #expect(try await eventually { try await tool.timer(key: "once") == nil })
        #expect(try await tool.history(key: "once").first?.lateness == .seconds(-90), "run 90 s ahead of its occurrence")
        await worker.shutdown()
        await store.close()
    }

    @Test(
        "plan(key:) lists the next occurrences in the schedule's zone across a clock change, and what each misfire policy makes of an outage",
        arguments: StoreKind.allCases)
    func plan(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        try await timers.schedule(key: "skip", every: .seconds(60), first: at(60), handler: "note", payload: Note(text: "x"), misfire: .skip)
        try await timers.schedule(key: "all", every: .seconds(60), first: at(60), handler: "note", payload: Note(text: "x"), misfire: .all(max: 3))
        try await timers.schedule(key: "once", every: .seconds(60), first: at(60), handler: "note", payload: Note(text: "x"), misfire: .once)
        let interval = try await timers.plan(key: "once", count: 3, outage: .seconds(150))
        #expect(interval.occurrences == [at(60), at(120), at(180)])
        #expect(interval.afterOutage?.fires == true && interval.afterOutage?.standsFor == 3 && interval.afterOutage?.next == at(240))
        let skip = try #require(try await timers.plan(key: "skip", outage: .seconds(150)).afterOutage)
        #expect(!skip.fires && skip.next == at(240))
        let all = try #require(try await timers.plan(key: "all", outage: .seconds(150)).afterOutage)
        #expect(all.fires && all.standsFor == 1 && all.next == at(120), "all: one run per missed occurrence, the next waits at once")

        await store.close()
    }

    @Test(
        "plan(key:) of a cron schedule shows its occurrences across Berlin's spring change with their offsets",
        arguments: StoreKind.allCases)
    func planAcrossDST(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        // The virtual clock starts on 2027-03-26: the schedule's first occurrence is the 27th.
        let start = try #require(ISO8601DateFormatter().date(from: "2027-03-26T12:00:00Z"))
        let virtual = VirtualClock(start: .nanoseconds(start.nanosecondsSince1970))
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        try await timers.schedule(key: "daily", cron: "30 2 * * *", in: berlin, handler: "note", payload: Note(text: "x"))
        let plan = try await timers.plan(key: "daily", count: 3)
        let shown = plan.occurrences.map { DurableTimerText.instant($0, in: berlin) }
        #expect(
            shown == ["2027-03-27 02:30:00 +01:00", "2027-03-28 03:30:00 +02:00", "2027-03-29 02:30:00 +02:00"], "the skipped 02:30 runs shifted by the gap")
        #expect(plan.description.contains("2027-03-28 03:30:00 +02:00 (Europe/Berlin)"))
        await store.close()
    }

    @Test(
        "The heartbeat writes one record at a time: across a jump of 960 of its intervals, none overlaps another, and the instance's record ends within one interval of the jump's end",
        arguments: StoreKind.allCases)
    func heartbeatAcrossAJump(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        await timers.start()
        let interval = timers.runner.heartbeatInterval
        await virtual.advance(by: .nanoseconds(interval * 960))
        let end = virtual.clock.now.nanoseconds
        // The beats of the jump come faster than a store that does not run on the clock's
        // executor (PostgreSQL) writes: they are served by one more write, with the time then.
        #expect(try await eventually { try await timers.instances().first.map { $0.seenNanoseconds >= end - interval } == true })
        #expect(timers.runner.mostHeartbeatWrites == 1)
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "stats() counts each handler's timers by status, its late repeating timers, its oldest due timer and the lateness of its recent runs, with the instances",
        arguments: StoreKind.allCases)
    func stats(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        try await timers.register("other", payload: Note.self) { _, _ in }
        await timers.start()
        try await timers.schedule(key: "ran", at: at(1), handler: "note", payload: Note(text: "x"))
        await virtual.advance(by: .seconds(1))
        #expect(try await eventually { try await timers.timer(key: "ran") == nil })
        try await timers.schedule(key: "later", at: at(500), handler: "note", payload: Note(text: "x"))
        try await timers.schedule(key: "tick", every: .seconds(10), first: at(10), handler: "other", payload: Note(text: "x"))
        try await timers.pause(key: "tick")
        await virtual.advance(by: .seconds(200))  // tick's occurrence at 10 is 191 s late, held by its pause
        let stats = try await timers.stats(lateBy: .seconds(60))
        let note = try #require(stats.handlers.first { $0.name == "note" })
        let other = try #require(stats.handlers.first { $0.name == "other" })
        #expect(note.counts == [.scheduled: 1] && note.recentRuns == 1 && note.lateness?.max == .zero)
        #expect(other.counts == [.paused: 1] && other.late == 1)
        #expect(stats.totals[.scheduled] == 1 && stats.totals[.paused] == 1)
        // Recorded alive every half horizon (30 s here), each beat armed before its write: the jump's
        // last beat is within the record's interval, whenever a store's writes land (PostgreSQL's do
        // not run on the virtual clock's executor).
        #expect(try await eventually { try await timers.stats().liveInstances.map(\.id) == [timers.instance] })
        #expect(try await timers.timers(matching: DurableTimerQuery(lateBy: .seconds(60))).timers.map(\.key) == ["tick"])
        #expect(try await timers.stats().description.contains("1 alive"))
        #expect(stats.description.contains("note") && stats.description.contains("other (paused)") == false)
        await timers.shutdown()
        await store.close()
    }
}
