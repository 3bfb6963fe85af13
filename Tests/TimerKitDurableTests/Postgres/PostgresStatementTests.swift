#if canImport(TimerKitPostgres)
import Foundation
import PostgresNIO
import Testing
@testable import TimerKitDurable
@testable import TimerKitPostgres

/// The PostgreSQL store's statements name exactly the placeholders of their binds: `$1` … `$n`,
/// each once at least, none beyond. No server: the statements are built, not run (the store's
/// tests run them on the real server).
@Suite("Durable timers on PostgreSQL: every statement's placeholders match its binds")
struct PostgresStatementTests {
    /// `1 … count`.
    func numbers(_ count: Int) -> [Int] { Array(0..<count).map { $0 + 1 } }

    @Test("The prepared statements: their placeholders are those of their binding types, and their bindings as many")
    func preparedStatements() throws {
        typealias Store = PostgresTimerStore
        #expect(Statement.placeholders(in: Store.ClaimKeys.sql) == numbers(Store.ClaimKeys.bindingDataTypes.count))
        #expect(Statement.placeholders(in: Store.Sweep.sql) == numbers(Store.Sweep.bindingDataTypes.count))
        #expect(Statement.placeholders(in: Store.FinishAll.sql) == numbers(Store.FinishAll.bindingDataTypes.count))
        for sql in [Store.PutReplace.sql, Store.PutKeep.sql, Store.PutFail.sql] {
            #expect(Statement.placeholders(in: sql) == numbers(Store.PutReplace.bindingDataTypes.count))
        }
        let claim = Store.ClaimKeys(now: nil, keys: ["a"], namespace: "n", owner: "o/1", lease: 1)
        #expect(try claim.makeBindings().count == Store.ClaimKeys.bindingDataTypes.count)
        let sweep = Store.Sweep(namespace: "n", handlers: ["h"], owner: "o/1", excluding: [], now: 1, lease: 1, limit: 1)
        #expect(try sweep.makeBindings().count == Store.Sweep.bindingDataTypes.count)
        let finish = Store.FinishAll(keys: ["a"], owners: ["o/1"], sequences: [1], namespace: "n", runs: [run(error: nil)])
        #expect(try finish.makeBindings().count == Store.FinishAll.bindingDataTypes.count)
    }

    @Test("The shared counting statements: the counts bind namespace, now and the lateness bound; the lateness, namespace and since")
    func countingStatements() {
        #expect(Statement.placeholders(in: DurableTimerFilter.countsSQL(dialect: .postgres)) == numbers(3))
        #expect(Statement.placeholders(in: DurableTimerFilter.latenessSQL(dialect: .postgres)) == numbers(2))
    }

    @Test(
        "A change's statement, with and without a notification and a recorded run (with and without an error, keeping one or several runs): its binds follow the change's own, numbered as they were added",
        arguments: [false, true], [0, 1, 3])
    func changedStatements(notifies: Bool, keep: Int) {
        let (namespace, key, owner, sequence): (String, String, String, Int64) = ("shop", "order/42", "instance/7", 12)
        let change: PostgresQuery = """
            UPDATE timerkit_timers SET owner = NULL WHERE namespace = \(namespace) AND key = \(key) AND owner = \(owner) AND sequence = \(sequence)
            RETURNING namespace, key, handler, ready_at_ns
            """
        for recorded in [nil, run(error: nil), run(error: "boom")] {
            let statement = PostgresTimerStore.changedStatement(
                change, notifying: notifies ? (namespace, 60_000_000_000) : nil, recording: recorded.map { ($0, namespace) }, keep: keep)
            #expect(statement.binds.count >= change.binds.count)
            #expect(Statement.placeholders(in: statement.sql) == numbers(statement.binds.count), "\(statement.sql)")
            #expect(statement.sql.hasPrefix("WITH changed AS (UPDATE"))
            #expect(statement.sql.contains("pg_notify") == notifies)
            #expect(statement.sql.contains("INSERT INTO timerkit_runs") == (recorded != nil))
        }
    }

    @Test("Placeholders are read outside string literals and quoted names; a statement's text never holds a value")
    func placeholderReading() {
        #expect(Statement.placeholders(in: "SELECT $1, '$2', \"$3\", $10, $1 FROM t WHERE x = $$") == [1, 10])
        var statement = Statement()
        let first = statement.bind("it's; DROP TABLE x")
        let second = statement.bind(Int64(5))
        statement.append("SELECT \(first), \(second)")
        #expect(statement.query.sql == "SELECT $1, $2::bigint")
        #expect(statement.query.binds.count == 2)
    }

    func run(error: String?) -> DurableTimerRun {
        DurableTimerRun(
            key: "order/42", handler: "order.expire", sequence: 12, attempt: 1, due: 1, started: 2, ended: 3, outcome: error == nil ? .succeeded : .failed,
            instance: "instance", error: error)
    }
}
#endif
