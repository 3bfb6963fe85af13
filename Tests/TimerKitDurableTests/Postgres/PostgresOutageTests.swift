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
    /// Starting without the database, a pool of one connection, and a pool the application fills:
    /// how an instance gets and shares its connections.
    @Suite("Durable timers on PostgreSQL: starting, the pool and its lanes", .serialized, .timeLimit(.minutes(3)))
    struct PostgresPoolTests {
        @Test(
            "C17: an instance started while its database refuses every connection: the initializer returns and reports it, calls throw unreachable saying why, run() waits — and once the network heals, a timer written meanwhile fires there without a restart"
        )
        func startsBeforeTheDatabase() async throws {
            let proxy = try FaultProxy()
            defer { proxy.stop() }
            try proxy.send("partition")
            let namespace = "start-\(UUID().uuidString.prefix(8))"
            let log = FireLog()
            let errors = Locked<[DurableTimerError]>([])
            let options = serverOptions { options in
                options.busyTimeout = .seconds(1)
                options.onError = { error in errors.withLock { $0.append(error) } }
            }
            // Before: the initializer threw unreachable, and the process had to be started again.
            let late = try await DurableTimers(postgres: try proxy.configuration(), namespace: namespace, options: options)
            try await late.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
            let opening = errors.withLock { $0 }.first
            guard case .unreachable(let reason)? = opening else {
                Issue.record("the outage at start was reported as unreachable: \(String(describing: opening))")
                return
            }
            #expect(reason.contains("opening again in the background"), "\(reason)")
            await #expect {
                try await late.schedule(key: "mine", after: .seconds(60), handler: "note", payload: Note(text: "x"))
            } throws: { error in
                guard case DurableTimerError.unreachable(let reason) = error else { return false }
                return reason.contains("the store is still opening")
            }
            let runner = Task { await late.run() }
            let writer = try await DurableTimers(postgres: try TestServer.configuration(), namespace: namespace, options: serverOptions())
            try await writer.register("note", payload: Note.self) { _, _ in }
            try await writer.schedule(key: "k", after: .seconds(2), handler: "note", payload: Note(text: "written during the outage"))
            try await Task.sleep(for: .seconds(3))
            #expect(log.count == 0, "nothing runs while the database cannot be reached")
            let retries = errors.withLock { $0.count }
            #expect(retries >= 2, "each failed opening is reported (\(retries))")
            try proxy.send("heal")
            #expect(await eventually { log.count == 1 }, "fired once the database answered")
            #expect(log.all.first?.payload == "written during the outage")
            // The pause between openings is at most five seconds: the overdue timer ran within
            // one pause (and its opening) of the heal, not at a refill half a minute on.
            #expect((log.all.first?.fire.lateness ?? .seconds(60)) < .seconds(30))
            runner.cancel()
            await runner.value
            await writer.shutdown()
        }

        @Test("A runner waiting at start for a database that does not answer: a shutdown ends run() at once; it does not wait for the database")
        func shutdownWhileWaitingForTheDatabase() async throws {
            let proxy = try FaultProxy()
            defer { proxy.stop() }
            try proxy.send("partition")
            let timers = try await DurableTimers(
                postgres: try proxy.configuration(), namespace: "waiting-\(UUID().uuidString.prefix(8))",
                options: serverOptions { $0.busyTimeout = .seconds(1) })
            try await timers.register("note", payload: Note.self) { _, _ in }
            let ended = Locked(false)
            let running = Task {
                await timers.run()
                ended.withLock { $0 = true }
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(!ended.withLock { $0 }, "run() waits for the database")
            await timers.shutdown()
            // Before: run() waited inside start() until the database answered — here, never.
            #expect(await eventually { ended.withLock { $0 } }, "run() returned after the shutdown")
            running.cancel()
        }

        @Test(
            "C17: a pool of one connection works: LISTEN has a connection of its own beside it, so timers another instance writes fire on notification, and the application's calls, claims and renewals share the one"
        )
        func poolOfOne() async throws {
            var configuration = try TestServer.configuration()
            configuration.options.maximumConnections = 1
            let namespace = "one-\(UUID().uuidString.prefix(8))"
            let log = FireLog()
            // Before: LISTEN held the only connection for good; every call timed out.
            let firer = try await DurableTimers(postgres: configuration, namespace: namespace, options: serverOptions { $0.busyTimeout = .seconds(5) })
            try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
            await firer.start()  // loads now; the next load is 30 s on
            let writer = try await DurableTimers(postgres: try TestServer.configuration(), namespace: namespace, options: serverOptions())
            try await writer.register("note", payload: Note.self) { _, _ in }
            try await Task.sleep(for: .milliseconds(500))  // the listener connects
            try await writer.schedule(key: "notified", after: .seconds(1), handler: "note", payload: Note(text: "from the writer"))
            try await firer.schedule(key: "own", after: .seconds(1), handler: "note", payload: Note(text: "its own"))
            #expect(await eventually { log.count == 2 })
            #expect(Set(log.all.map(\.payload)) == ["from the writer", "its own"])
            #expect((log.all.map(\.fire.lateness).max() ?? .seconds(60)) < .seconds(15), "armed by the notification, not by the next load")
            // The ends are written after the handlers return, in the next deletion round.
            #expect(try await eventually { try await firer.count() == 0 })
            await firer.shutdown()
            await writer.shutdown()
        }

        @Test(
            "C17: a call whose connection goes half-open times out as unreachable and closes that connection: with a pool of one, the next call gets a new connection and succeeds, instead of waiting behind the dead one until the operating system gives up"
        )
        func timedOutCallClosesItsConnection() async throws {
            let proxy = try FaultProxy()
            defer { proxy.stop() }
            var configuration = try proxy.configuration()
            configuration.options.maximumConnections = 1
            let timers = try await DurableTimers(
                postgres: configuration, namespace: "half-open-\(UUID().uuidString.prefix(8))", options: serverOptions { $0.busyTimeout = .seconds(1) })
            #expect(try await timers.count() == 0)
            try proxy.send("blackhole-all")  // the pool's connection: bytes stop both ways, nothing closes
            await #expect {
                try await timers.count()
            } throws: { error in
                guard case DurableTimerError.unreachable = error else { return false }
                return true
            }
            // Before: the query never answered, so postgres-nio kept the connection leased; every
            // later call waited for it and timed out too.
            #expect(
                await eventually {
                    do { return try await timers.count() == 0 } catch { return false }
                }, "a new connection serves the next call")
            await timers.shutdown()
        }

        @Test(
            "C17: the application's calls fill every general connection of two instances' pools (inserts a trigger holds 4 s each): renewals and completions take the reserved one, a 1 s lease held for 5 s never lapses, and the timer runs once"
        )
        func reservedLane() async throws {
            let database = try ScratchDatabase()
            defer { database.drop() }
            try await DurableTimers.migrate(postgres: try database.configuration())
            try database.psql(
                """
                CREATE FUNCTION timerkit_test_slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(4); RETURN NEW; END $$;
                CREATE TRIGGER slow_insert BEFORE INSERT ON timerkit_timers FOR EACH ROW WHEN (NEW.key LIKE 'slow-%') EXECUTE FUNCTION timerkit_test_slow_insert();
                """)
            var configuration = try database.configuration()
            configuration.options.maximumConnections = 4  // 3 general, 1 reserved
            let namespace = "lanes"
            let starts = Locked<[String]>([])
            let errors = Locked<[String]>([])
            var instances: [String: DurableTimers] = [:]
            for name in ["a", "b"] {
                let options = serverOptions { options in
                    options.lease = .seconds(1)
                    options.onError = { error in errors.withLock { $0.append("\(name): \(error)") } }
                }
                let timers = try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
                try await timers.register("hold", payload: Note.self) { _, _ in
                    starts.withLock { $0.append(name) }
                    try await Task.sleep(for: .seconds(5))
                }
                try await timers.register("note", payload: Note.self) { _, _ in }
                await timers.start()
                instances[name] = timers
            }
            try await instances["a"]!.schedule(key: "held", after: .seconds(1), handler: "hold", payload: Note(text: "held"))
            #expect(await eventually { !starts.withLock { $0 }.isEmpty })
            let holder = try #require(starts.withLock { $0 }.first)
            // Six inserts at once on the holder, each held 4 s by the trigger: its three general
            // connections are busy for 8 s, past the lease eight times over.
            let writer = instances[holder]!
            let inserts = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<6 {
                        group.addTask {
                            try await writer.schedule(key: "slow-\(index)", after: .seconds(3_600), handler: "note", payload: Note(text: "slow"))
                        }
                    }
                    try await group.waitForAll()
                }
            }
            try await inserts.value
            #expect(
                await eventually {
                    do { return try await writer.timer(key: "held") == nil } catch { return false }
                }, "the held timer completed")
            // Before: the renewals queued behind the inserts; the lease lapsed, the other instance
            // claimed the timer and ran it again.
            #expect(starts.withLock { $0 } == [holder], "one run: \(starts.withLock { $0 })")
            #expect(!errors.withLock { $0 }.contains { $0.contains("lease") }, "no lease lost: \(errors.withLock { $0 })")
            for timers in instances.values { await timers.shutdown() }
        }
    }
}
#endif
