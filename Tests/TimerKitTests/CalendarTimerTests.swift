import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// Calendar timers and a registry's calendar entries, exactly, on a virtual clock whose instants
/// are read as nanoseconds since 1970.
@Suite("Calendar timers")
struct CalendarTimerTests {
    /// 2026-11-25T00:00:00Z, a Wednesday.
    static let start = Duration.seconds(1_795_564_800)
    static let utc = TimeZone(identifier: "UTC")!

    static func seconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970) - 1_795_564_800 }

    @Test("C2, C12: a calendar timer runs at each occurrence of its cron schedule, exactly, numbered; it runs without its handle being kept", .checksLeaks)
    func runsAtOccurrences() throws {
        let virtual = VirtualClock(start: Self.start)
        let runs = Locked<[CalendarFire]>([])
        let schedule = try CalendarSchedule(cron: "*/15 9-17 * * mon-fri", in: Self.utc)
        watchForLeaks(
            try CalendarTimer.schedule(schedule, clock: virtual.clock) { _, fire in runs.withLock { $0.append(fire) } })
        virtual.advance(by: .seconds(9 * 3600))
        virtual.advance(by: .seconds(15 * 60))
        virtual.advance(by: .seconds(15 * 60))
        let fires = runs.withLock { $0 }
        #expect(fires.map { Self.seconds($0.occurrence) } == [32_400, 33_300, 34_200])
        #expect(fires.map(\.lateness) == [.zero, .zero, .zero])
        #expect(fires.map(\.sequenceNumber) == [1, 2, 3])
        #expect(fires.allSatisfy { $0.skippedOccurrences == 0 && !$0.isManual })
        // It runs on without the handle; ends, and lets go, when invalidated.
        let timer = try CalendarTimer.schedule(schedule, clock: virtual.clock) { _, _ in }
        #expect(timer.nextOccurrence.map(Self.seconds) == 35_100)
        timer.invalidate()
        #expect(!timer.isValid && timer.nextOccurrence == nil)
        virtual.advance(by: .seconds(3600))
        #expect(runs.withLock { $0.count } == 7)
    }

    @Test(
        "C5, C9: occurrences missed while the timer was suspended run once, for the latest, counting the others; suspend is idempotent, and resume runs it at once"
    )
    func missedOccurrencesCoalesce() throws {
        let virtual = VirtualClock(start: Self.start)
        let runs = Locked<[CalendarFire]>([])
        let timer = try CalendarTimer.schedule(try CalendarSchedule(cron: "* * * * *", in: Self.utc), clock: virtual.clock) { _, fire in
            runs.withLock { $0.append(fire) }
        }
        #expect(timer.suspend())
        #expect(!timer.suspend(), "already suspended")
        virtual.advance(by: .seconds(5 * 60 + 30))
        #expect(runs.withLock { $0 }.isEmpty)
        #expect(timer.resume())
        virtual.advance(by: .zero)
        let fire = try #require(runs.withLock { $0.first })
        #expect(Self.seconds(fire.occurrence) == 300 && fire.skippedOccurrences == 4 && fire.lateness == .seconds(30))
        virtual.advance(by: .seconds(30))
        #expect(runs.withLock { $0.map { Self.seconds($0.occurrence) } } == [300, 360])
        timer.invalidate()
    }

    @Test("C5: after five days suspended, a schedule of every second runs once, for the latest occurrence, counting up to 10,000 skipped")
    func longSleepCoalesces() throws {
        let virtual = VirtualClock(start: Self.start)
        let runs = Locked<[CalendarFire]>([])
        let timer = try CalendarTimer.schedule(try CalendarSchedule(cron: "* * * * * *", in: Self.utc), clock: virtual.clock) { _, fire in
            runs.withLock { $0.append(fire) }
        }
        timer.suspend()
        virtual.advance(by: .seconds(5 * 86_400))
        timer.resume()
        virtual.advance(by: .zero)
        let fires = runs.withLock { $0 }
        #expect(fires.count == 1)
        #expect(fires.first.map { Self.seconds($0.occurrence) } == 5 * 86_400 && fires.first?.skippedOccurrences == 10_000)
        virtual.advance(by: .seconds(1))
        #expect(runs.withLock { $0.count } == 2)
        timer.invalidate()
    }

    @Test("C7: fire() runs the handler now as a manual run and keeps the next occurrence; a bounded schedule ends the timer after its last occurrence")
    func manualFireAndEnd() throws {
        let virtual = VirtualClock(start: Self.start)
        let runs = Locked<[CalendarFire]>([])
        let hourly = try CalendarSchedule(cron: "0 * * * *", in: Self.utc).bounded(until: Date(timeIntervalSince1970: 1_795_564_800 + 7200))
        let timer = try CalendarTimer.schedule(hourly, clock: virtual.clock) { _, fire in runs.withLock { $0.append(fire) } }
        #expect(timer.fire())
        virtual.advance(by: .zero)
        #expect(runs.withLock { $0.map(\.isManual) } == [true])
        #expect(timer.nextOccurrence.map(Self.seconds) == 3600)
        virtual.advance(by: .seconds(3 * 3600))
        #expect(runs.withLock { $0.map { Self.seconds($0.occurrence) } } == [0, 3600])
        #expect(!timer.isValid, "the schedule ended at 02:00")
        #expect(!timer.fire())
    }

    @Test("C11: a calendar timer bound to an owner never keeps it alive, and ends at its next occurrence once the owner is gone", .checksLeaks)
    func boundOwner() throws {
        final class Owner: Sendable {}
        let virtual = VirtualClock(start: Self.start)
        var owner: Owner? = Owner()
        watchForLeaks(owner)
        let runs = Locked(0)
        let timer = try CalendarTimer.schedule(
            try CalendarSchedule(cron: "0 * * * *", in: Self.utc), clock: virtual.clock,
            .bound(to: owner!) { _, _, _ in
                runs.withLock { $0 += 1 }
            })
        virtual.advance(by: .seconds(3600))
        owner = nil
        virtual.advance(by: .seconds(3600))
        #expect(runs.withLock { $0 } == 1)
        #expect(!timer.isValid)
    }

    @Test("C17: a calendar timer on a clock that does not follow dates is refused")
    func monotonicClockRefused() throws {
        #expect(throws: TimerError.clockMismatch(expected: .wall, got: .continuous)) {
            try CalendarTimer.schedule(try CalendarSchedule(cron: "0 * * * *", in: Self.utc), clock: .continuous) { _, _ in }
        }
    }

    @Test(
        "A registry runs calendar work under a key: entries show its next occurrence; cancel, suspend and resume act on it; the key is free when the schedule ends"
    )
    func registryCalendarEntries() throws {
        let virtual = VirtualClock(start: Self.start)
        let registry = TimerRegistry<String>(clock: virtual.clock)
        let runs = Locked<[String]>([])
        let daily = try CalendarSchedule(cron: "30 9 * * *", in: Self.utc)
        #expect(try registry.schedule("digest", on: daily) { key, fire in runs.withLock { $0.append("\(key)@\(Self.seconds(fire.occurrence))") } })
        #expect(try !registry.schedule("digest", on: daily, onConflict: .keep) { _, _ in })
        #expect(throws: TimerError.keyInUse("digest")) { try registry.schedule("digest", on: daily, onConflict: .fail) { _, _ in } }
        let entry = try #require(registry.entry("digest"))
        #expect(entry.nextDeadline?.nanoseconds == (1_795_564_800 + 34_200) * 1_000_000_000 && entry.interval == nil && entry.fireCount == 0)
        virtual.advance(by: .seconds(34_200))
        #expect(runs.withLock { $0 } == ["digest@34200"])
        #expect(registry.suspend("digest"))
        virtual.advance(by: .seconds(86_400))
        #expect(runs.withLock { $0.count } == 1)
        #expect(registry.resume("digest"))
        virtual.advance(by: .zero)
        #expect(runs.withLock { $0 } == ["digest@34200", "digest@120600"])
        #expect(throws: TimerError.self) { try registry.reschedule("digest", at: .now) }
        #expect(registry.cancel("digest") == .cancelled)
        virtual.advance(by: .seconds(86_400))
        #expect(runs.withLock { $0.count } == 2)
        // A bounded schedule frees its key once it has ended; one that has ended already takes none.
        let once = try daily.bounded(until: Date(timeIntervalSince1970: 1_795_564_800 + 4 * 86_400))
        try registry.schedule("once", on: once) { key, _ in runs.withLock { $0.append(key) } }
        #expect(registry.contains("once"))
        virtual.advance(by: .seconds(86_400))
        #expect(runs.withLock { $0.last } == "once")
        #expect(!registry.contains("once"))
        #expect(try !registry.schedule("over", on: once) { _, _ in })
        #expect(!registry.contains("over"))
        // An ended schedule replaces nothing.
        try registry.schedule("live", on: daily) { _, _ in }
        #expect(try !registry.schedule("live", on: once) { _, _ in })
        #expect(registry.contains("live"))
    }
}

extension RealTime {
    /// What a virtual clock cannot show: runs on a concurrent queue, and a run that takes longer
    /// than the schedule's interval (a virtual clock's handlers run on the advancing thread, one by
    /// one, and cannot advance their own clock).
    @Suite("Calendar timers in real time")
    struct CalendarTimerRealTimeTests {
        @Test(
            "C14, C5: on a concurrent queue a calendar timer's runs never overlap — fire() asked for during a run follows it — and occurrences that pass during a long run get no run of their own: the next stands for the latest and counts them"
        )
        func runsNeverOverlap() async throws {
            let inFlight = Counter()
            let overlaps = Counter()
            let runs = Recorder<CalendarFire>()
            let concurrent = DispatchQueue(label: "calendar-timer-runs", attributes: .concurrent)
            let everySecond = try CalendarSchedule(cron: "* * * * * *", in: TimeZone(identifier: "UTC")!)
            let timer = try CalendarTimer.schedule(everySecond, delivery: .queue(concurrent)) { calendarTimer, fire in
                if inFlight.increment() > 1 { overlaps.increment() }
                runs.append(fire)
                if fire.sequenceNumber == 1 {
                    // Two manual runs asked for while this one is under way; and 2.5 s, in which
                    // the next two occurrences pass.
                    calendarTimer.fire()
                    calendarTimer.fire()
                    Thread.sleep(forTimeInterval: 2.5)
                } else {
                    Thread.sleep(forTimeInterval: 0.05)
                }
                inFlight.decrement()
            }
            let done = await eventually(timeout: .seconds(30)) {
                let all = runs.all
                return all.filter(\.isManual).count == 2 && all.filter { !$0.isManual }.count >= 3
            }
            timer.invalidate()
            let all = runs.all
            #expect(done, "\(all)")
            #expect(overlaps.current == 0, "C14: overlapping runs")
            #expect(all.map(\.sequenceNumber) == Array(1..<all.count + 1), "numbered in the order they ran: \(all)")
            let occurrences = all.filter { !$0.isManual }
            try #require(occurrences.count >= 2, "\(all)")
            #expect(occurrences[0].sequenceNumber == 1)
            // The first run took 2.5 s: the run after it stands for an occurrence at least 2 s
            // later, and counts the one (or more, under load) between.
            #expect(occurrences[1].occurrence.timeIntervalSince(occurrences[0].occurrence) >= 2, "\(occurrences)")
            #expect(occurrences[1].skippedOccurrences >= 1, "\(occurrences)")
            #expect(zip(occurrences, occurrences.dropFirst()).allSatisfy { $0.occurrence < $1.occurrence }, "\(occurrences)")
            // Never early (C2): each occurrence's run began at or after it.
            #expect(occurrences.allSatisfy { $0.firedAt >= $0.occurrence }, "\(occurrences)")
        }
    }
}
