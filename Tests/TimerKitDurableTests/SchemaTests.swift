import Foundation
import GRDB
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// The schema's versions on SQLite: a new file records them, a file written by 0.1.0 is upgraded
/// with its timers intact, and what this build cannot read (a newer version, a foreign table) is
/// refused untouched.
@Suite("Durable timers: schema versions and migrations (SQLite)")
struct SchemaTests {
    /// The fixtures Scripts/make-schema-fixtures wrote with TimerKit 0.1.0.
    static func fixturePath(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    }

    /// `database` as 0.1.0 left it.
    static func written010(_ database: TemporaryDatabase) throws {
        let queue = try DatabaseQueue(path: database.path)
        let dump = try String(contentsOf: fixturePath("sqlite-0.1.0.sql"), encoding: .utf8)
        try queue.writeWithoutTransaction { db in try db.execute(sql: dump) }
    }

    /// The rows of `timerkit_schema`: version and who applied it.
    static func versions(_ database: TemporaryDatabase) throws -> [(version: Int, by: String)] {
        try DatabaseQueue(path: database.path).read { db in
            guard try db.tableExists("timerkit_schema") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT version, applied_by FROM timerkit_schema ORDER BY version").map { ($0[0], $0[1]) }
        }
    }

    /// The reason of the ``DurableTimerError/schema(reason:)`` that `body` throws; `nil` when it
    /// throws nothing or something else.
    static func schemaError(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let DurableTimerError.schema(reason) {
            return reason
        } catch {
            return nil
        }
    }

    @Test("A new file is made at this build's schema version, every version recorded with the release that applied it")
    func newFile() throws {
        let database = try TemporaryDatabase()
        _ = try DurableTimers(path: database.path)
        let versions = try Self.versions(database)
        #expect(DurableTimers.schemaVersion == 7)
        #expect(versions.map(\.version) == Array(1...SchemaVersions.current))
        #expect(versions.allSatisfy { $0.by == SchemaVersions.release })
        _ = try DurableTimers(path: database.path)  // opening again applies nothing
        #expect(try Self.versions(database).count == SchemaVersions.current)
    }

    @Test(
        "C2, C4, C6: a file written by 0.1.0 is upgraded on opening, and every timer it held fires on time: one-shots, a batch, a grid, a key outside ASCII, a second namespace; the parked timer stays parked with its error, the calendar rule keeps its next occurrence, and sequence numbers go on from 0.1.0's"
    )
    func upgrade010() async throws {
        let database = try TemporaryDatabase()
        try Self.written010(database)
        #expect(try Self.versions(database).isEmpty)
        let stored = try await DatabaseQueue(path: database.path).read { db in try Int64.fetchOne(db, sql: "SELECT max(sequence) FROM timerkit_timers") }
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        let versions = try Self.versions(database)
        #expect(versions.map(\.version) == Array(1...SchemaVersions.current))
        #expect(versions.map(\.by) == [SchemaVersions.adopted] + Array(repeating: SchemaVersions.release, count: SchemaVersions.current - 1))
        let startedIndex = try await DatabaseQueue(path: database.path).read { db in
            try String.fetchOne(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'timerkit_runs_started'")
        }
        #expect(startedIndex == "timerkit_runs_started", "version 7: the history's index by start")

        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        let keys = Set(try await timers.timers().map(\.key))
        #expect(keys == ["once", "within", "every-10s", "daily-berlin", "batch-1", "batch-2", "café ☕", "parked"])
        let parked = try await timers.timer(key: "parked")
        #expect(parked?.state == .failed && parked?.lastError?.isEmpty == false && parked?.attempts == 1)
        let daily = try #require(try await timers.timer(key: "daily-berlin"))
        // 09:00 in Berlin on 2026-11-25 is 08:00 UTC: 8 h after the epoch.
        #expect(seconds(daily.nextDeadline) == 8 * 3600 && daily.rule != nil && daily.misfire == .all(max: 3))
        #expect(try await timers.timer(key: "within")?.misfire == .within(.seconds(5)))
        let other = try DurableTimers(path: database.path, namespace: "other", clock: virtual.clock, options: exactOptions())
        #expect(try await other.count() == 7)

        await timers.start()
        await virtual.advance(to: TimerInstant(kind: .virtual, nanoseconds: epoch + 135_000_000_000))
        await timers.shutdown()
        let fires = log.all.map { "\($0.payload) \(seconds($0.fire.scheduledDeadline))" }
        let grid = stride(from: 30, through: 130, by: 10).map { "default every \(Double($0))" }
        let expected = Set(grid + ["default once 60.0", "default within 90.0", "default b1 120.0", "default b2 121.0", "default unicode 130.0"])
        #expect(Set(fires) == expected && fires.count == expected.count)
        #expect(log.all.allSatisfy { $0.fire.lateness == .zero })

        // Sequences continue after 0.1.0's: an occurrence's idempotency key never repeats.
        try await timers.schedule(key: "new", at: at(500), handler: "note", payload: Note(text: "new"))
        let sequence = try await DatabaseQueue(path: database.path).read { db in
            try Int64.fetchOne(db, sql: "SELECT sequence FROM timerkit_timers WHERE key = 'new'")
        }
        #expect((sequence ?? 0) > (stored ?? .max))
    }

    @Test("C17: a file at a newer schema version is refused with an error that names both versions, and is left as it was")
    func newerVersionRefused() throws {
        let database = try TemporaryDatabase()
        _ = try DurableTimers(path: database.path)
        try DatabaseQueue(path: database.path).write { db in
            try db.execute(sql: "INSERT INTO timerkit_schema (version, summary, applied_at, applied_by) VALUES (99, 'from the future', 'now', 'TimerKit 9')")
        }
        let reason = Self.schemaError { _ = try DurableTimers(path: database.path) }
        #expect(reason?.contains("schema version 99") == true && reason?.contains("up to \(SchemaVersions.current)") == true)
        #expect(try Self.versions(database).map(\.version) == Array(1...SchemaVersions.current) + [99])
    }

    @Test("C17: a table named timerkit_timers that TimerKit did not make is refused, with its columns in the error, and never altered")
    func foreignTableRefused() throws {
        let database = try TemporaryDatabase()
        try DatabaseQueue(path: database.path).write { db in try db.execute(sql: "CREATE TABLE timerkit_timers (id INTEGER PRIMARY KEY, name TEXT)") }
        let reason = Self.schemaError { _ = try DurableTimers(path: database.path) }
        #expect(reason?.contains("did not make") == true && reason?.contains("id, name") == true)
        let columns = try DatabaseQueue(path: database.path).read { db in try db.columns(in: "timerkit_timers").map(\.name) }
        #expect(columns == ["id", "name"])
        #expect(try Self.versions(database).isEmpty)
    }

    @Test(
        "C17: SchemaUpgrade.verifyOnly never changes the schema: a new file and a 0.1.0 file are refused with the version needed, nothing created; a current file opens and runs"
    )
    func verifyOnly() async throws {
        let options = exactOptions { $0.schemaUpgrade = .verifyOnly }
        let empty = try TemporaryDatabase()
        let reason = Self.schemaError { _ = try DurableTimers(path: empty.path, options: options) }
        #expect(reason?.contains("no TimerKit tables") == true && reason?.contains("needs version \(SchemaVersions.current)") == true)
        let tables = try await DatabaseQueue(path: empty.path).read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master") }
        #expect(tables.isEmpty)

        let old = try TemporaryDatabase()
        try Self.written010(old)
        let reasonOld = Self.schemaError { _ = try DurableTimers(path: old.path, options: options) }
        #expect(reasonOld?.contains("schema version 1") == true && reasonOld?.contains("postgresSchemaSQL(from: 1)") == true)
        #expect(try Self.versions(old).isEmpty)

        _ = try DurableTimers(path: old.path)  // migrated by a process that may
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers = try DurableTimers(path: old.path, clock: virtual.clock, options: options)
        try await timers.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await timers.start()
        await virtual.advance(by: .seconds(60))
        await timers.shutdown()
        #expect(log.all.contains { $0.payload == "default once" })
    }

    @Test("Eight connections opening one 0.1.0 file at once: one of them migrates, each version is recorded once, all of them open")
    func concurrentOpening() throws {
        let database = try TemporaryDatabase()
        try Self.written010(database)
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                _ = try SQLiteTimerStore(path: database.path, busyTimeout: .seconds(30), durability: .full)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try Self.versions(database).map(\.version) == Array(1...SchemaVersions.current))
    }
}
