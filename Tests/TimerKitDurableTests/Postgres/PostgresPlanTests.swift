#if canImport(TimerKitPostgres)
import Foundation
import PostgresNIO
import Testing
@testable import TimerKitDurable
@testable import TimerKitPostgres

/// The statements of every fire look their rows up by key in every plan the server may choose.
/// A plan that joins the keys with the namespace costs time in proportion to the namespace, and
/// a server picks one by its statistics of the moment: a fleet that was fast in one run slowed
/// tenfold in the next.
@Suite("Durable timers on PostgreSQL: the plans of every fire")
struct PostgresPlanTests {
    /// The plans of the statements inside the functions `calls` runs (auto_explain, told to
    /// report to the client), in a transaction rolled back.
    func nestedPlans(_ database: ScratchDatabase, _ calls: [String]) throws -> String {
        try ScratchDatabase.psql(
            try database.url(),
            """
            BEGIN;
            LOAD 'auto_explain';
            SET auto_explain.log_min_duration = 0;
            SET auto_explain.log_nested_statements = on;
            SET auto_explain.log_level = notice;
            SET client_min_messages = notice;
            \(calls.map { "SELECT count(*) FROM \($0);" }.joined(separator: "\n"))
            ROLLBACK;
            """)
    }

    /// The scans of `timerkit_timers` in `plan` that do not look rows up by key: a sequential
    /// scan, or an index scan whose condition names no key (a range of the namespace).
    func scansNotByKey(_ plan: String) -> [String] {
        let lines = plan.split(separator: "\n").map(String.init)
        var offending: [String] = []
        for (index, line) in lines.enumerated() where line.contains("Scan") && line.contains(" timerkit_timers") {
            if line.contains("Seq Scan") {
                offending.append(line)
                continue
            }
            // The scan's condition: the next "Index Cond" or "Recheck Cond" before the next node.
            let condition = lines[(index + 1)...].prefix { !$0.contains("->") }.first { $0.contains("Index Cond:") || $0.contains("Recheck Cond:") }
            if condition?.contains("key =") != true { offending.append(line + " | " + (condition ?? "no condition")) }
        }
        return offending
    }

    @Test(
        "The claim of woken keys, the batched removal of one-shots and the renewal probe the primary key per key, on a namespace of 10,000 timers with 20,000 dead rows, analyzed when it held 100 or now: no scan of the namespace, no join that compares rows pairwise"
    )
    func everyPlanProbesByKey() async throws {
        let database = try ScratchDatabase()
        defer { database.drop() }
        // The deploy step's migration: it returns once the schema is in place (a runner's
        // initializer may return before, while its store opens in the background).
        try await DurableTimers.migrate(postgres: try database.configuration(), timeout: .seconds(120))
        // Statistics taken when the namespace held 100 timers (autovacuum analyzes a young table
        // early); then 10,000 claimed timers, each updated twice (two dead rows each).
        try ScratchDatabase.psql(
            try database.url(),
            """
            INSERT INTO timerkit_timers (namespace, key, handler, payload, misfire, due_ns, ready_at_ns, sequence, owner)
            SELECT 'plans', 'k' || i, 'h', '\\x00', 'once', 1, 1, i, 'o/1' FROM generate_series(1, 100) i;
            ANALYZE timerkit_timers;
            INSERT INTO timerkit_timers (namespace, key, handler, payload, misfire, due_ns, ready_at_ns, sequence, owner)
            SELECT 'plans', 'k' || i, 'h', '\\x00', 'once', 1, 1, i, 'o/1' FROM generate_series(101, 10000) i;
            UPDATE timerkit_timers SET ready_at_ns = 2 WHERE namespace = 'plans';
            UPDATE timerkit_timers SET ready_at_ns = 3 WHERE namespace = 'plans';
            """)
        let keys = (1...64).map { "k\($0)" }
        let keyArray = "ARRAY[\(keys.map { "'\($0)'" }.joined(separator: ","))]::text[]"
        let owners = "ARRAY[\(keys.map { _ in "'o/1'" }.joined(separator: ","))]::text[]"
        let sequences = "ARRAY[\((1...64).map(String.init).joined(separator: ","))]::bigint[]"
        // No run to record beside any key: zeros and empty outcomes, one per key.
        let none = [
            ("0", "bigint"), ("0", "bigint"), ("0", "integer"), ("''", "text"), ("0", "bigint"), ("0", "bigint"), ("''", "text"), ("''", "text"), ("''", "text")
        ]
        .map { value, type in "array_fill(\(value)::\(type), ARRAY[64])" }
        let calls = [
            "timerkit_renew(NULL, 1000, \(keyArray), \(owners), \(sequences), 'plans')",
            "timerkit_finish_runs(\(keyArray), \(owners), \(sequences), 'plans', \(none.joined(separator: ", ")))",
            "timerkit_claim_keys(NULL, \(keyArray), 'plans', 'o/2', 1000)"
        ]
        for analyzed in [false, true] {
            if analyzed { try ScratchDatabase.psql(try database.url(), "ANALYZE timerkit_timers") }
            for call in calls {
                let plans = try nestedPlans(database, [call])
                let context = "\(call.prefix(24)), \(analyzed ? "analyzed" : "analyzed at 100 timers"):\n\(plans)"
                #expect(plans.contains("timerkit_timers_pkey"), "\(context)")
                #expect(scansNotByKey(plans).isEmpty, "\(context)")
                // No join compares rows pairwise (version 6's removal joined its runs to the
                // deleted rows so: a nested loop over every pair, 26 ms a call at 377 rows).
                #expect(!plans.contains("Join Filter"), "\(context)")
            }
        }
        // The claim took the 64 rows, each once.
        let claimed = try ScratchDatabase.psql(
            try database.url(), "SELECT count(*) FILTER (WHERE claimed) FROM timerkit_claim_keys(NULL, \(keyArray), 'plans', 'o/2', 1000)")
        #expect(claimed == "64\n")
    }
}
#endif
