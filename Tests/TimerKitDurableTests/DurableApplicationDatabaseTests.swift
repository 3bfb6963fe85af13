import Foundation
import GRDB
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A GRDB configuration that waits for other writers, as `DurableTimers(database:)` requires.
private var waiting: GRDB.Configuration {
    var configuration = GRDB.Configuration()
    configuration.busyMode = .timeout(60)
    return configuration
}

/// Durable timers in the application's own SQLite database (`DurableTimers(database:)`), written
/// by the application's transactions (`in: db`): real files, the virtual clock.
@Suite("Durable timers in the application's own SQLite database and transactions")
struct DurableApplicationDatabaseTests {
    /// The application's pool with its table, and a runner on it.
    final class Application: @unchecked Sendable {
        let file: TemporaryDatabase
        let database: DatabasePool
        let virtual = makeVirtualClock()
        let log = FireLog()
        let timers: DurableTimers

        init() async throws {
            file = try TemporaryDatabase()
            database = try DatabasePool(path: file.path, configuration: waiting)
            try await database.write { db in try db.execute(sql: "CREATE TABLE orders (id TEXT PRIMARY KEY)") }
            timers = try DurableTimers(database: database, clock: virtual.clock, options: exactOptions())
            try await timers.register("expire", payload: Note.self) { [log] note, fire in log.append(note.text, fire) }
            await timers.start()
        }

        func orders() throws -> [String] { try database.read { db in try String.fetchAll(db, sql: "SELECT id FROM orders ORDER BY id") } }

        func close() async { await timers.shutdown() }
    }

    struct Rollback: Error {}

    @Test(
        "A write that rolls back takes its timer with its business row: nothing is stored, the runner arms nothing, and nothing fires at its deadline"
    )
    func rollback() async throws {
        let app = try await Application()
        #expect(throws: Rollback.self) {
            try app.database.write { db in
                try db.execute(sql: "INSERT INTO orders (id) VALUES ('order-1')")
                try app.timers.schedule(key: "order-1/expiry", at: at(5), handler: "expire", payload: Note(text: "order-1"), in: db)
                throw Rollback()
            }
        }
        #expect(try app.orders().isEmpty)
        #expect(try await app.timers.timer(key: "order-1/expiry") == nil)
        #expect(app.timers.armedAt("order-1/expiry") == nil)
        await app.virtual.advance(by: .seconds(10))
        #expect(app.log.count == 0)
        await app.close()
    }

    @Test(
        "C6, C10: a timer written in the application's transaction is armed at its commit, not before, and fires once at its deadline; a cancel and a reschedule in later transactions take effect at their commits, and a cancel in a savepoint that rolled back has none"
    )
    func commit() async throws {
        let app = try await Application()
        try await app.database.write { db in
            try db.execute(sql: "INSERT INTO orders (id) VALUES ('order-2')")
            try app.timers.schedule(key: "order-2/expiry", at: at(5), handler: "expire", payload: Note(text: "order-2"), in: db)
            try app.timers.schedule(key: "order-2/reminder", after: .seconds(3), handler: "expire", payload: Note(text: "reminder"), in: db)
            #expect(app.timers.armedAt("order-2/expiry") == nil, "not armed before the commit")
        }
        #expect(try app.orders() == ["order-2"])
        #expect(app.timers.armedAt("order-2/expiry") == at(5) && app.timers.armedAt("order-2/reminder") == at(3), "armed at the commit")

        try await app.database.write { db in
            #expect(try app.timers.cancel(key: "order-2/reminder", in: db) == .cancelled)
            try app.timers.reschedule(key: "order-2/expiry", at: at(4), in: db)
            #expect(app.timers.armedAt("order-2/reminder") == at(3) && app.timers.armedAt("order-2/expiry") == at(5), "unchanged before the commit")
        }
        #expect(app.timers.armedAt("order-2/reminder") == nil && app.timers.armedAt("order-2/expiry") == at(4), "changed at the commit")
        #expect(try await app.timers.timer(key: "order-2/reminder") == nil)

        // A cancel in a savepoint that rolls back, in a transaction that commits: nothing changes.
        try await app.database.write { db in
            try db.inSavepoint {
                let outcome = try app.timers.cancel(key: "order-2/expiry", in: db)
                #expect(outcome == .cancelled)
                return .rollback
            }
        }
        #expect(app.timers.armedAt("order-2/expiry") == at(4), "still armed: the runner reads what was committed")
        #expect(try await app.timers.timer(key: "order-2/expiry") != nil)

        try await expectFiresOnce(
            "order-2/expiry", payload: "order-2", at: at(4), after: .seconds(4), timers: app.timers, virtual: app.virtual, log: app.log)
        await app.close()
    }

    @Test(
        "C17: a call `in: db` outside a transaction, or on a runner that has a file of its own, is refused with a clear error and writes nothing; a database that would fail writes at once while another connection writes is refused"
    )
    func misuse() async throws {
        let app = try await Application()
        #expect {
            try app.database.writeWithoutTransaction { db in
                try app.timers.schedule(key: "loose", at: at(5), handler: "expire", payload: Note(text: "loose"), in: db)
            }
        } throws: { error in
            guard case .store(let reason) = error as? DurableTimerError else { return false }
            return reason.contains("inside `write { db in … }`")
        }
        let own = try TemporaryDatabase()
        let separate = try DurableTimers(path: own.path, clock: app.virtual.clock, options: exactOptions())
        try await separate.register("expire", payload: Note.self) { _, _ in }
        #expect {
            try app.database.write { db in
                try separate.schedule(key: "elsewhere", at: at(5), handler: "expire", payload: Note(text: "elsewhere"), in: db)
            }
        } throws: { error in
            guard case .store(let reason) = error as? DurableTimerError else { return false }
            return reason.contains("DurableTimers(database:)")
        }
        #expect(try await app.timers.count() == 0)
        #expect(try await separate.count() == 0)
        // GRDB's default busy mode fails a write at once while another connection writes.
        #expect {
            _ = try DurableTimers(database: try DatabaseQueue(path: own.folder.appendingPathComponent("default.sqlite").path))
        } throws: { error in
            guard case .cannotOpen(_, let reason) = error as? DurableTimerError else { return false }
            return reason.contains("busyMode")
        }
        await app.close()
    }

    @Test(
        "A process killed after writing the business row and the timer in one transaction of the application's database, before its commit, leaves neither: SQLite never commits a transaction whose process died"
    )
    func killedInTransaction() async throws {
        let file = try TemporaryDatabase()
        let log = file.folder.appendingPathComponent("log").path
        let probe = Process()
        probe.executableURL = builtExecutable("timerkit-durable-probe")
        probe.arguments = [file.path, log, "in-transaction"]
        try probe.run()
        let inTransaction = await eventually { (try? String(contentsOfFile: log, encoding: .utf8))?.contains("in transaction") == true }
        #expect(inTransaction, "the probe wrote both and holds its transaction open")
        kill(probe.processIdentifier, SIGKILL)
        probe.waitUntilExit()
        let database = try DatabasePool(path: file.path, configuration: waiting)
        let orders = try await database.read { db in try String.fetchAll(db, sql: "SELECT id FROM orders") }
        #expect(orders.isEmpty, "the row was never committed")
        let timers = try DurableTimers(database: database, options: exactOptions())
        #expect(try await timers.count() == 0, "nor the timer")
    }
}
