import Foundation
import GRDB
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// Durable timers on cron expressions and calendar schedules, on both stores: stored as text,
/// read back equal, fired at their occurrences on the virtual clock, ended by their bounds.
@Suite("Durable timers on calendar schedules")
struct DurableCalendarScheduleTests {
    /// The tests' epoch (2026-11-25T00:00:00Z, a Wednesday) is 01:00 in Berlin.
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    func runner(_ kind: StoreKind, _ file: TemporaryDatabase, _ virtual: VirtualClock, log: FireLog, trace: RunnerTrace? = nil) async throws -> (
        DurableTimers, any DurableTimerStore
    ) {
        let (store, namespace) = try await kind.makeStore(file: file)
        let options = trace.map { $0.recording(exactOptions()) } ?? exactOptions()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: options)
        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await timers.start()
        return (timers, store)
    }

    @Test(
        "A cron timer (*/15 9-17 * * mon-fri in Berlin) is stored as its text, reads back equal, and fires at 09:00, 09:15, 09:30 Berlin time, each once",
        arguments: StoreKind.allCases)
    func cronTimerFires(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let trace = RunnerTrace(virtual)
        let (timers, store) = try await runner(kind, file, virtual, log: log, trace: trace)
        try await timers.schedule(key: "work", cron: "*/15 9-17 * * mon-fri", in: Self.berlin, handler: "note", payload: Note(text: "work"))
        let info = try #require(try await timers.timer(key: "work"))
        #expect(info.schedule == (try CalendarSchedule(cron: "*/15 9-17 * * 1-5", in: Self.berlin)))
        #expect(info.rule == nil)
        #expect(seconds(info.nextDeadline) == 8 * 3600, "09:00 in Berlin is 08:00 UTC")
        // Occurrence by occurrence (a single jump over all three would fire once, for three: C5).
        // Each is armed once the last run's end is written, which a loaded machine may do after the
        // clock got there: reach nudges the clock at the same instant until it ran.
        for (index, time) in [28_800, 29_700, 30_600].enumerated() {
            let ran = await virtual.reach(Double(time)) { log.all.count == index + 1 }
            if !ran {
                let stored = try? await timers.timer(key: "work")
                Issue.record("not run at \(time): in memory \(timers.occurrencePhases); stored \(String(describing: stored)); \(trace)")
            }
        }
        let deadlines: [Double] = log.all.map { seconds($0.fire.scheduledDeadline) }
        #expect(deadlines == [28_800, 29_700, 30_600], "09:00, 09:15 and 09:30 in Berlin")
        // The run's end (the move to 09:45) is written after the handler returns.
        #expect(await eventually { (try? await timers.timer(key: "work"))?.nextDeadline == at(31_500) })
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "A bounded schedule fires at its occurrences before its end, then the timer is gone; a jittered one fires at the times its schedule gives, on every store",
        arguments: StoreKind.allCases)
    func boundsAndJitter(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let (timers, store) = try await runner(kind, file, virtual, log: log)
        let utc = TimeZone(identifier: "UTC")!
        let hourly = try CalendarSchedule(cron: "0 * * * *", in: utc)
        try await timers.schedule(key: "bounded", schedule: try hourly.bounded(until: at(3 * 3600)), handler: "note", payload: Note(text: "bounded"))
        let jittered = try hourly.jittered(upTo: .seconds(300), seed: 11)
        try await timers.schedule(key: "jittered", schedule: jittered, handler: "note", payload: Note(text: "jittered"))
        // Hour by hour, then a step past each jittered occurrence.
        let expected = jittered.occurrences(after: at(0), count: 4).map(seconds)
        #expect(expected.enumerated().allSatisfy { index, time in time > Double(index) * 3600 && time <= Double(index) * 3600 + 300 })
        for time in ([3600, 7200, 10_800] + expected).sorted() {
            let count = log.all.count
            #expect(await virtual.reach(time) { log.all.count > count || time == 10_800 })
        }
        let fires = log.all
        #expect(fires.filter { $0.payload == "bounded" }.map { seconds($0.fire.scheduledDeadline) } == [3600, 7200])
        #expect(fires.filter { $0.payload == "jittered" }.map { seconds($0.fire.scheduledDeadline) } == expected)
        #expect(await eventually { (try? await timers.timer(key: "bounded")) == .some(nil) }, "a bounded schedule ends like a one-shot")
        await timers.shutdown()
        await store.close()
    }

    @Test("C17: a cron expression that does not read is refused with the field and the reason; an ended schedule is refused; nothing is stored")
    func badSchedules() async throws {
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let (timers, store) = try await runner(.sqlite, file, virtual, log: log)
        await #expect(throws: DurableTimerError.invalidRule("invalid calendar rule: cron expression '0 25 * * *': hour field, '25': 25 is not in 0–23")) {
            try await timers.schedule(key: "bad", cron: "0 25 * * *", handler: "note", payload: Note(text: "bad"))
        }
        let ended = try CalendarSchedule(cron: "0 * * * *", in: Self.berlin).bounded(until: at(-3600))
        await #expect(throws: DurableTimerError.self) {
            try await timers.schedule(key: "ended", schedule: ended, handler: "note", payload: Note(text: "ended"))
        }
        #expect(try await timers.timers(limit: 10).isEmpty)
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "C17: a stored cron schedule naming a zone this system does not know is parked with the reason when due, never run; a calendar rule stored as 0.1.0 wrote it still fires"
    )
    func storedForms() async throws {
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let log = FireLog()
        let (timers, store) = try await runner(.sqlite, file, virtual, log: log)
        try await timers.schedule(key: "cron", cron: "0 9 * * *", in: Self.berlin, handler: "note", payload: Note(text: "cron"))
        try await timers.schedule(key: "rule", rule: try CalendarRule.daily(at: 9, in: Self.berlin), handler: "note", payload: Note(text: "rule"))
        await timers.shutdown()
        await store.close()
        let queue = try DatabaseQueue(path: file.path)
        try await queue.write { db in
            #expect(try String.fetchOne(db, sql: "SELECT rule FROM timerkit_timers WHERE key = 'cron'") == "CRON_TZ=Europe/Berlin 0 9 * * *")
            #expect(try String.fetchOne(db, sql: "SELECT rule FROM timerkit_timers WHERE key = 'rule'")?.hasPrefix("{") == true)
            try db.execute(sql: "UPDATE timerkit_timers SET rule = 'CRON_TZ=Mars/Olympus_Mons 0 9 * * *' WHERE key = 'cron'")
        }
        try queue.close()
        let (again, againStore) = try await runner(.sqlite, file, virtual, log: log)
        await virtual.advance(by: .seconds(9 * 3600))
        #expect(await eventually { log.all.count == 1 })
        #expect(log.all.map(\.payload) == ["rule"])
        #expect(await eventually { (try? await again.timer(key: "cron"))?.state == .failed })
        #expect(try await again.timer(key: "cron")?.lastError?.contains("the time zone 'Mars/Olympus_Mons' is unknown here") == true)
        await again.shutdown()
        await againStore.close()
    }
}
