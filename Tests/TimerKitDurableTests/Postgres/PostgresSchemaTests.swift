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
    /// The schema's versions on PostgreSQL, each test in a database of its own: migrations from
    /// nothing and from a database written by 0.1.0, from many instances at once; the SQL a DBA runs;
    /// and an application role with no DDL privileges, as production runs it.
    @Suite("Durable timers on PostgreSQL: schema versions, migrations and roles", .serialized, .timeLimit(.minutes(3)))
    struct PostgresSchemaTests {
        func options(_ change: (inout DurableTimers.Options) -> Void = { _ in }) -> DurableTimers.Options { serverOptions(change) }

        /// The versions recorded, and who applied each.
        func versions(_ scratch: ScratchDatabase) throws -> [String] {
            try scratch.psql("SELECT version || ' ' || applied_by FROM timerkit_schema ORDER BY version").split(separator: "\n").map(String.init)
        }

        /// The reason of the ``DurableTimerError/schema(reason:)`` that `body` throws.
        func schemaError(_ body: () async throws -> Void) async -> String? {
            do {
                try await body()
                return nil
            } catch let DurableTimerError.schema(reason) {
                return reason
            } catch {
                return "not a schema error: \(error)"
            }
        }

        @Test("An empty database is migrated to this build's version on the first start; eight instances starting at once record each version once")
        func concurrentStart() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            let configuration = try scratch.configuration()
            let opened = try await withThrowingTaskGroup(of: DurableTimers.self) { group in
                for _ in 0..<8 { group.addTask { try await DurableTimers(postgres: configuration, options: options()) } }
                var all: [DurableTimers] = []
                for try await timers in group { all.append(timers) }
                return all
            }
            #expect(opened.count == 8)
            #expect(try versions(scratch) == ["1 \(SchemaVersions.release)"] + (2...SchemaVersions.current).map { "\($0) \(SchemaVersions.release)" })
            for timers in opened { await timers.shutdown() }
        }

        @Test(
            "C2, C6: a database written by 0.1.0 is upgraded by the first instance that starts; its overdue one-shots fire once each, the parked timer stays parked, the other namespace keeps its timers"
        )
        func upgrade010() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            try scratch.psql(try String(contentsOf: SchemaTests.fixturePath("postgres-0.1.0.sql"), encoding: .utf8))
            #expect(try scratch.psql("SELECT to_regclass('timerkit_schema') IS NULL") == "t\n")
            let log = FireLog()
            let timers = try await DurableTimers(postgres: try scratch.configuration(), options: options())
            #expect(try versions(scratch) == ["1 \(SchemaVersions.adopted)"] + (2...SchemaVersions.current).map { "\($0) \(SchemaVersions.release)" })
            // Version 7: 64-bit skipped counts, and the history's index by start.
            #expect(
                try scratch.psql("SELECT data_type FROM information_schema.columns WHERE table_name = 'timerkit_timers' AND column_name = 'skipped'")
                    == "bigint\n")
            #expect(try scratch.psql("SELECT to_regclass('timerkit_runs_started') IS NOT NULL") == "t\n")
            try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
            #expect(Set(try await timers.timers().map(\.key)) == ["once", "within", "every-10s", "daily-berlin", "batch-1", "batch-2", "café ☕", "parked"])
            #expect(try await timers.timer(key: "parked")?.state == .failed)
            await timers.start()
            let oneShots: Set = ["default once", "default b1", "default b2", "default unicode"]
            #expect(await eventually { oneShots.isSubset(of: Set(log.all.map(\.payload))) })
            await timers.shutdown()
            #expect(log.all.filter { oneShots.contains($0.payload) }.count == 4)
            #expect(try await timers.timer(key: "parked")?.state == .failed)
            let other = try await DurableTimers(postgres: try scratch.configuration(), namespace: "other", options: options())
            #expect(try await other.count() == 7)
            await other.shutdown()
        }

        @Test("C17: options out of range are refused before the store connects: a database with no schema is left without one")
        func optionsRefusedBeforeMigrating() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            let tooLong = options { $0.lease = .seconds(86_401) }
            await #expect {
                _ = try await DurableTimers(postgres: try scratch.configuration(), options: tooLong)
            } throws: { error in
                guard case DurableTimerError.invalidDuration(let reason) = error else { return false }
                return reason.contains("lease")
            }
            #expect(try scratch.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'timerkit%'").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        }

        @Test("C17: a database at a newer schema version is refused with an error naming both versions, and is left as it was")
        func newerVersionRefused() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            #expect(try await DurableTimers.migrate(postgres: try scratch.configuration()) == 1...SchemaVersions.current)
            #expect(try await DurableTimers.migrate(postgres: try scratch.configuration()) == nil)
            try scratch.psql("INSERT INTO timerkit_schema (version, summary, applied_by) VALUES (99, 'from the future', 'TimerKit 9')")
            let reason = await schemaError { _ = try await DurableTimers(postgres: try scratch.configuration(), options: options()) }
            #expect(reason?.contains("schema version 99") == true && reason?.contains("up to \(SchemaVersions.current)") == true)
            #expect(try versions(scratch).count == SchemaVersions.current + 1)
        }

        @Test(
            "C17: an application role with no DDL privileges runs timers on a migrated database (the documented grants), and on an older one is refused clearly until a DBA runs the exported SQL"
        )
        func leastPrivilegeRole() async throws {
            let role = "timerkit_app_\(UUID().uuidString.prefix(8).lowercased())"
            try ScratchDatabase.psql(TestServer.url ?? "", "CREATE ROLE \(role) LOGIN")
            let current = try ScratchDatabase()
            let old = try ScratchDatabase()
            defer {
                current.drop()
                old.drop()
                _ = try? ScratchDatabase.psql(TestServer.url ?? "", "DROP ROLE IF EXISTS \(role)")
            }
            let verify = options { $0.schemaUpgrade = .verifyOnly }

            // A database migrated at deploy time by the owner; the role gets the grants, and no more.
            try await DurableTimers.migrate(postgres: try current.configuration())
            try current.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC;\n" + DurableTimers.postgresGrants(to: role))
            #expect(throws: PsqlFailed.self) { try current.psql("CREATE TABLE app_may_not (id int)", as: role) }
            let log = FireLog()
            let timers = try await DurableTimers(postgres: try current.configuration(as: role), options: verify)
            try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
            await timers.start()
            try await timers.schedule(key: "k", after: .milliseconds(100), handler: "note", payload: Note(text: "as the app"))
            #expect(await eventually { log.count == 1 })
            await timers.shutdown()
            // The default (automatic) needs no DDL either when there is nothing to migrate.
            let automatic = try await DurableTimers(postgres: try current.configuration(as: role), options: options())
            await automatic.shutdown()

            // A database 0.1.0 wrote: the role cannot migrate it, and says so.
            try old.psql(try String(contentsOf: SchemaTests.fixturePath("postgres-0.1.0.sql"), encoding: .utf8))
            try old.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC;\nGRANT SELECT, INSERT, UPDATE, DELETE ON timerkit_timers TO \(role);")
            let reason = await schemaError { _ = try await DurableTimers(postgres: try old.configuration(as: role), options: verify) }
            #expect(reason?.contains("schema version 1") == true && reason?.contains("postgresSchemaSQL(from: 1)") == true)
            let denied = await schemaError { _ = try await DurableTimers(postgres: try old.configuration(as: role), options: options()) }
            #expect(denied?.contains("may not change the schema") == true && denied?.contains("permission denied") == true)
            // The DBA runs the exported SQL (twice: it can run again), grants, and the role starts.
            try old.psql(DurableTimers.postgresSchemaSQL(from: 1))
            try old.psql(DurableTimers.postgresSchemaSQL(from: 1) + DurableTimers.postgresGrants(to: role))
            #expect(try versions(old) == ["1 \(SchemaVersions.adopted)"] + (2...SchemaVersions.current).map { "\($0) \(SchemaVersions.release)" })
            let upgraded = try await DurableTimers(postgres: try old.configuration(as: role), options: verify)
            #expect(try await upgraded.count() == 8)
            await upgraded.shutdown()
        }

        @Test(
            "C6: a database at version 2 (the schema before the sweep) holding a backlog is migrated to 3 by the first instance: the sweep's function and the table's autovacuum settings are in place, and the backlog fires once each"
        )
        func upgradeFromVersion2() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            // Version 2 as that build wrote it: its migrations, then timers it stored (overdue).
            try scratch.psql((PostgresTimerStore.statements(for: 1...2).map { $0 + ";" }).joined(separator: "\n"))
            try scratch.psql(
                """
                INSERT INTO timerkit_timers (namespace, key, handler, payload, misfire, due_ns, ready_at_ns, sequence)
                SELECT 'default', 'old' || i, 'note', convert_to('{"text":"x"}', 'UTF8'), 'once', 1000, 1000, nextval('timerkit_sequence')
                FROM generate_series(1, 50) i
                """)
            #expect(try versions(scratch).count == 2)
            #expect(try scratch.psql("SELECT to_regproc('timerkit_sweep') IS NULL") == "t\n")
            let fired = Locked<[String]>([])
            let timers = try await DurableTimers(postgres: try scratch.configuration(), options: options())
            try await timers.register("note", payload: Note.self) { _, fire in fired.withLock { $0.append(fire.key) } }
            await timers.start()
            #expect(try versions(scratch).last == "\(SchemaVersions.current) \(SchemaVersions.release)")
            #expect(try scratch.psql("SELECT to_regproc('timerkit_sweep') IS NOT NULL") == "t\n")
            let settings = try scratch.psql("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'timerkit_timers'")
            #expect(settings.contains("autovacuum_analyze_scale_factor=0.01") && settings.contains("autovacuum_vacuum_scale_factor=0.02"), "\(settings)")
            let end = ContinuousClock.now + .seconds(30)
            while fired.withLock({ $0.count }) < 50, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
            #expect(fired.withLock { $0.sorted() } == (1...50).map { "old\($0)" }.sorted(), "each once")
            #expect(try await eventually { try await timers.count() == 0 }, "the ends written")
            await timers.shutdown()
        }

        @Test("The SQL for an empty database makes the whole schema, can run again, and leaves a database a verify-only instance accepts")
        func scriptFromNothing() async throws {
            let scratch = try ScratchDatabase()
            defer { scratch.drop() }
            try scratch.psql(DurableTimers.postgresSchemaSQL())
            try scratch.psql(DurableTimers.postgresSchemaSQL())
            #expect(try versions(scratch) == ["1 \(SchemaVersions.release)"] + (2...SchemaVersions.current).map { "\($0) \(SchemaVersions.release)" })
            let timers = try await DurableTimers(postgres: try scratch.configuration(), options: options { $0.schemaUpgrade = .verifyOnly })
            try await timers.register("note", payload: Note.self) { _, _ in }
            try await timers.schedule(key: "k", after: .seconds(60), handler: "note", payload: Note(text: "x"))
            #expect(try await timers.count() == 1)
            await timers.shutdown()
        }
    }
}
#endif
