#if canImport(TimerKitPostgres)
import Foundation
import Logging
import PostgresNIO
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable
@testable import TimerKitPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Scheduling inside the application's own transaction (`inTransaction(on:_:)`), on the real
/// server: the business row and its timer commit or roll back together.
@Suite("Durable timers on PostgreSQL: scheduling in the application's transaction")
struct PostgresTransactionTests {
    /// A runner on the virtual clock, the application's own client, and a business table of its own.
    final class Application: @unchecked Sendable {
        let virtual = makeVirtualClock()
        let log = FireLog()
        let store: any DurableTimerStore
        let timers: DurableTimers
        let client: PostgresClient
        let table = "app_orders_\(UUID().uuidString.prefix(8).lowercased())"
        let logger = Logger(label: "app")
        private let running: Task<Void, Never>

        init() async throws {
            let file = try TemporaryDatabase()
            let (store, namespace) = try await StoreKind.postgres.makeStore(file: file)
            self.store = store
            timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
            client = PostgresClient(configuration: try TestServer.configuration())
            let client = client
            running = Task { await client.run() }
            try await timers.register("expire", payload: Note.self) { [log] note, fire in log.append(note.text, fire) }
            await timers.start()
            try await client.query("CREATE TABLE \(unescaped: table) (id text PRIMARY KEY)", logger: logger)
        }

        func orders() async throws -> [String] {
            var ids: [String] = []
            for try await id in try await client.query("SELECT id FROM \(unescaped: table) ORDER BY id", logger: logger).decode(String.self) { ids.append(id) }
            return ids
        }

        /// Whether this instance has the key in memory (armed, or further on).
        func isArmed(_ key: String) -> Bool { timers.runner.read { $0.occurrences[StoredKey(key)] != nil } }

        func close() async {
            _ = try? await client.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: logger)
            running.cancel()
            await timers.shutdown()
            await store.close()
        }
    }

    struct Rollback: Error {}

    @Test(
        "A transaction that rolls back takes its timer with its business row: no timer is stored and no instance is woken (a timer committed after it is armed, it never is), and nothing fires at its deadline"
    )
    func rollback() async throws {
        let app = try await Application()
        do {
            try await app.client.withTransaction(logger: app.logger) { connection in
                try await connection.query("INSERT INTO \(unescaped: app.table) (id) VALUES ('order-1')", logger: app.logger)
                try await app.timers.inTransaction(on: connection) {
                    try await app.timers.schedule(key: "order-1/expiry", at: at(5), handler: "expire", payload: Note(text: "order-1"))
                    #expect(try await app.timers.timer(key: "order-1/expiry")?.nextDeadline == at(5), "the transaction sees its own timer")
                }
                throw Rollback()
            }
            Issue.record("the transaction was not rolled back")
        } catch let error as PostgresTransactionError where error.closureError is Rollback {}
        #expect(try await app.timers.timer(key: "order-1/expiry") == nil)
        #expect(try await app.orders().isEmpty)
        // Notifications arrive in commit order: once the one of a later commit has armed its
        // timer, the rolled-back one would have armed its own before.
        _ = try await app.client.withTransaction(logger: app.logger) { connection in
            try await app.timers.inTransaction(on: connection) {
                try await app.timers.schedule(key: "later", at: at(6), handler: "expire", payload: Note(text: "later"))
            }
        }
        #expect(await eventually { app.isArmed("later") }, "the commit's notification armed the later timer")
        #expect(!app.isArmed("order-1/expiry"), "no notification for the rolled-back timer")
        await app.virtual.advance(by: .seconds(6))
        #expect(await eventually { app.log.count == 1 })
        #expect(app.log.all.map(\.payload) == ["later"])
        await app.close()
    }

    @Test(
        "C6, C10: a timer scheduled in a transaction is invisible and unarmed until the commit, armed by the commit's notification, and fires once at its deadline; a cancel and a reschedule in later transactions take effect at their commits, every instance told by the notification"
    )
    func commit() async throws {
        let app = try await Application()
        let pending = AsyncGate()
        let committed = AsyncGate()
        let transaction = Task {
            try await app.client.withTransaction(logger: app.logger) { connection in
                try await connection.query("INSERT INTO \(unescaped: app.table) (id) VALUES ('order-2')", logger: app.logger)
                try await app.timers.inTransaction(on: connection) {
                    try await app.timers.schedule(key: "order-2/expiry", at: at(5), handler: "expire", payload: Note(text: "order-2"))
                    try await app.timers.schedule(key: "order-2/reminder", at: at(3), handler: "expire", payload: Note(text: "reminder"))
                }
                pending.open()
                await committed.wait()
            }
        }
        await pending.wait()
        #expect(try await app.timers.timer(key: "order-2/expiry") == nil, "not visible before the commit")
        #expect(try await app.orders().isEmpty)
        #expect(!app.isArmed("order-2/expiry"), "not armed before the commit")
        committed.open()
        try await transaction.value
        #expect(try await app.orders() == ["order-2"])
        #expect(await eventually { app.isArmed("order-2/expiry") && app.isArmed("order-2/reminder") }, "armed by the commit's notification")

        // Cancelled in a transaction: still armed until its commit.
        let (cancelled, cancelCommitted) = (AsyncGate(), AsyncGate())
        let cancelling = Task {
            try await app.client.withTransaction(logger: app.logger) { connection in
                try await app.timers.inTransaction(on: connection) {
                    let outcome = try await app.timers.cancel(key: "order-2/reminder")
                    #expect(outcome == .cancelled)
                }
                cancelled.open()
                await cancelCommitted.wait()
            }
        }
        await cancelled.wait()
        #expect(app.isArmed("order-2/reminder"), "the cancel is not committed yet")
        #expect(try await app.timers.timer(key: "order-2/reminder") != nil)
        cancelCommitted.open()
        try await cancelling.value
        #expect(await eventually { !app.isArmed("order-2/reminder") }, "disarmed by the commit's notification")

        // Moved a second earlier in a transaction: re-armed at 4 by its commit's notification
        // (armed at 5 still, it would not fire when the clock reaches 4).
        _ = try await app.client.withTransaction(logger: app.logger) { connection in
            try await app.timers.inTransaction(on: connection) { try await app.timers.reschedule(key: "order-2/expiry", at: at(4)) }
        }
        #expect(await eventually { app.timers.armedAt("order-2/expiry") == at(4) }, "re-armed by the commit's notification")
        try await expectFiresOnce(
            "order-2/expiry", payload: "order-2", at: at(4), after: .seconds(4), timers: app.timers, virtual: app.virtual, log: app.log)
        await app.close()
    }

    @Test(
        "A process killed after writing the business row and the timer in one transaction, before its commit, leaves neither: the server rolls the transaction back when its connection ends"
    )
    func killedInTransaction() async throws {
        let app = try await Application()
        let folder = try TemporaryDatabase()
        let log = folder.folder.appendingPathComponent("log").path
        let probe = Process()
        probe.executableURL = builtExecutable("timerkit-fleet-probe")
        probe.arguments = [try TestServer.url ?? { throw TestServer.Missing() }(), app.timers.namespace, log, "killed", "--in-transaction", app.table]
        try probe.run()
        let inTransaction = await eventually { (try? String(contentsOfFile: log, encoding: .utf8))?.contains("in transaction") == true }
        #expect(inTransaction, "the probe wrote both and holds its transaction open")
        #expect(try await app.timers.timer(key: "order-1/expiry") == nil, "neither is visible while it is open")
        #expect(try await app.orders().isEmpty)
        kill(probe.processIdentifier, SIGKILL)
        probe.waitUntilExit()
        // The server notices the closed connection and rolls back; the rows stay locked until it
        // has, so a write of the same key waits for that and then finds nothing.
        _ = try await app.client.withTransaction(logger: app.logger) { connection in
            try await connection.query("INSERT INTO \(unescaped: app.table) (id) VALUES ('order-1')", logger: app.logger)
        }
        #expect(try await app.orders() == ["order-1"], "the killed process's row was rolled back")
        #expect(try await app.timers.timer(key: "order-1/expiry") == nil, "and its timer with it")
        #expect(try await app.timers.count() == 0)
        await app.close()
    }
}

#endif
