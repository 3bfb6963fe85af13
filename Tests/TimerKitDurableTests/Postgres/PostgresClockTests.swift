#if canImport(TimerKitPostgres)
import Foundation
import PostgresNIO
import Testing
@testable import TimerKit
@testable import TimerKitDurable
@testable import TimerKitPostgres

// Inside the fleet suite, which is serialized: its database-restart test would cut these
// tests' connections if they ran beside it.
extension FleetTests {
    /// The database's clock, where the instances' clocks really disagree with it: its clock function
    /// shifted in a database of its own (a skew that cancels out nowhere), and its offset measured
    /// while the pool makes callers wait.
    @Suite("Durable timers on PostgreSQL: the database's clock", .serialized, .timeLimit(.minutes(3)))
    struct PostgresClockTests {
        /// Makes the database's clock read `shift` off the server's (and so off every host's here).
        func shiftClock(_ scratch: ScratchDatabase, by shift: Duration) throws {
            try scratch.psql(
                """
                CREATE OR REPLACE FUNCTION timerkit_now_ns() RETURNS bigint LANGUAGE sql VOLATILE AS
                $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint + \(shift.saturatingNanoseconds) $$
                """)
        }

        /// A writer and a firer on `scratch` with a 4 s horizon (a refill every 2 s). Returns the
        /// lateness, on the database's clock, of a timer due 1 s after it is written (inside the
        /// horizon: armed by NOTIFY) and of one due 6 s after (beyond it: loaded by a refill), and the
        /// skews reported.
        func latenesses(_ scratch: ScratchDatabase) async throws -> (notified: Duration, refilled: Duration, skews: [Int64]) {
            let skews = Locked<[Int64]>([])
            let options = serverOptions { options in
                options.horizon = .seconds(4)
                options.onError = { error in
                    if case .clockSkew(let milliseconds) = error { skews.withLock { $0.append(milliseconds) } }
                }
            }
            let log = FireLog()
            let writer = try await DurableTimers(postgres: try scratch.configuration(), options: options)
            try await writer.register("note", payload: Note.self) { _, _ in }
            let firer = try await DurableTimers(postgres: try scratch.configuration(), options: options)
            try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
            await firer.start()
            try await writer.schedule(key: "notified", after: .seconds(1), handler: "note", payload: Note(text: "notified"))
            try await writer.schedule(key: "refilled", after: .seconds(6), handler: "note", payload: Note(text: "refilled"))
            _ = await eventually { log.count == 2 }
            await firer.shutdown()
            await writer.shutdown()
            let fires = Dictionary(log.all.map { ($0.payload, $0.fire.lateness) }, uniquingKeysWith: { first, _ in first })
            return (fires["notified"] ?? .seconds(3600), fires["refilled"] ?? .seconds(3600), skews.withLock { $0 })
        }

        @Test(
            "C2: with the database's clock 45 s ahead of every host, and then 45 s behind, timers fire on the database's time — none early, none 45 s late, whether armed by NOTIFY or by a refill — and every instance reports the skew"
        )
        func realSkew() async throws {
            let control = try ScratchDatabase()
            let ahead = try ScratchDatabase()
            let behind = try ScratchDatabase()
            defer {
                for scratch in [control, ahead, behind] { scratch.drop() }
            }
            for scratch in [control, ahead, behind] { try await DurableTimers.migrate(postgres: try scratch.configuration()) }
            try shiftClock(ahead, by: .seconds(45))
            try shiftClock(behind, by: .seconds(-45))

            let unshifted = try await latenesses(control)
            for (scratch, sign) in [(ahead, Int64(1)), (behind, -1)] {
                let shifted = try await latenesses(scratch)
                // Lateness is measured on the database's clock, so it is never negative (the claim's
                // SQL refuses an early one) and, with the offset applied, close to the control's: a
                // host-clock instant taken for a database one would put it 45 s off.
                #expect(shifted.notified >= .zero && shifted.refilled >= .zero)
                #expect(shifted.notified < unshifted.notified + .seconds(10), "armed by NOTIFY: \(shifted.notified), control \(unshifted.notified)")
                #expect(shifted.refilled < unshifted.refilled + .seconds(10), "loaded by a refill: \(shifted.refilled), control \(unshifted.refilled)")
                #expect(!shifted.skews.isEmpty && shifted.skews.allSatisfy { abs($0 - sign * 45_000) < 5_000 }, "skews reported: \(shifted.skews)")
            }
            #expect(unshifted.skews.isEmpty)
        }

        @Test(
            "C2: the database's clock jumps 20 s ahead while a timer waits, armed for 30 s on: the next measurement moves the offset, the wake-up is re-armed, and the timer fires on the database's time, not 20 s late"
        )
        func offsetMoveRearms() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            try await DurableTimers.migrate(postgres: try scratch.configuration())
            let log = FireLog()
            let firer = try await DurableTimers(postgres: try scratch.configuration(), options: serverOptions())
            try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
            await firer.start()
            try await firer.schedule(key: "waiting", after: .seconds(30), handler: "note", payload: Note(text: "waiting"))
            try shiftClock(scratch, by: .seconds(20))
            // Measured every 10 s: the move is seen within 10 s, the timer is due 10 s after the shift.
            #expect(await eventually { log.count == 1 })
            let lateness = log.all.first?.fire.lateness ?? .seconds(3_600)
            // Before: armed at the host's reading under the old offset, it woke 20 s late.
            #expect(lateness >= .zero && lateness < .seconds(10), "lateness on the database's clock: \(lateness)")
            #expect(firer.runner.rearmings >= 1)
            await firer.shutdown()
        }

        @Test(
            "The offset is measured on a connection in hand: while the pool's only connection is held for 2 s, the offset measured to the same host's database stays within its own uncertainty, not half the wait"
        )
        func offsetExcludesTheWait() async throws {
            var configuration = try TestServer.configuration()
            configuration.options.maximumConnections = 1
            configuration.options.minimumConnections = 0
            let store = try await PostgresTimerStore(
                configuration: configuration, timeSource: .database, notifyWithin: .seconds(60), timeout: .seconds(30), maximumSkew: .seconds(1),
                onError: { _ in })
            // The pool's one connection is held (leased, idle) for 2 s by another caller.
            let leased = Locked(false)
            let busy = Task {
                try await store.client.withConnection { _ in
                    leased.withLock { $0 = true }
                    try await Task.sleep(for: .seconds(2))
                }
            }
            #expect(await eventually { leased.withLock { $0 } })
            let waited = ContinuousClock.now
            try await store.measureOffset()
            let wait = ContinuousClock.now - waited
            _ = try await busy.value
            await store.close()
            // The server runs on this host: the true offset is zero. Before, half the wait for the
            // connection (about a second here) was taken for an offset.
            #expect(wait > .milliseconds(300), "the measurement waited for the busy connection (\(wait))")
            #expect(
                abs(store.clockOffset) <= store.clockOffsetUncertainty + 1_000_000,
                "offset \(store.clockOffset) ns, uncertainty \(store.clockOffsetUncertainty) ns"
            )
            #expect(Duration.nanoseconds(store.clockOffsetUncertainty) < wait / 4)
        }
    }
}
#endif
