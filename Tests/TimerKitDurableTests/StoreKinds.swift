import Foundation
import GRDB
import Testing

@testable import TimerKit
@testable import TimerKitDurable

#if canImport(TimerKitPostgres)
@testable import TimerKitPostgres
import PostgresNIO
#endif

/// The stores the seam's suite runs against: SQLite always, PostgreSQL when the package is built
/// with it (see `Scripts/with-postgres`).
enum StoreKind: String, CaseIterable, CustomStringConvertible {
    case sqlite
    #if canImport(TimerKitPostgres)
    case postgres
    #endif

    var description: String { rawValue }

    /// A fresh store for one test: a new SQLite file, or a namespace of its own in the test
    /// server (runners on a virtual clock pass its readings: the store uses them as its time).
    /// Returns the store and the namespace to use.
    func makeStore(file: TemporaryDatabase) async throws -> (store: any DurableTimerStore, namespace: String) {
        switch self {
        case .sqlite:
            return (try SQLiteTimerStore(path: file.path, busyTimeout: .seconds(5), durability: .normal), "default")
        #if canImport(TimerKitPostgres)
        case .postgres:
            // A call timeout of a minute: under load (the suite beside busy loops on every core, the
            // server on the same two cores) the seam suite's first connections, all opened at once
            // as the run starts, once went unanswered for 10 s.
            let store = try await PostgresTimerStore(
                configuration: try TestServer.configuration(), timeSource: .host, notifyWithin: .seconds(60), timeout: .seconds(60),
                maximumSkew: .seconds(1), onError: { _ in })
            return (store, "test-\(UUID().uuidString)")
        #endif
        }
    }
}

extension StoreKind {
    /// Writes `count` runs straight into the history of `namespace`, each ended at `endedAt` (keys
    /// `prefix/1`, `prefix/2`, …).
    func insertRuns(file: TemporaryDatabase, namespace: String, count: Int, endedAt: Int64, prefix: String = "aged") async throws {
        switch self {
        case .sqlite:
            try await DatabaseQueue(path: file.path).write { db in
                try db.execute(
                    sql: """
                        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                        INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                        SELECT ?, ? || '/' || i, ?, i, 1, 'note', ?, ?, 'succeeded', 'test', NULL FROM n
                        """, arguments: [count, namespace, prefix, endedAt, endedAt, endedAt])
            }
        #if canImport(TimerKitPostgres)
        case .postgres:
            try await TestServer.withClient { client in
                _ = try await client.query(
                    """
                    INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                    SELECT \(namespace), \(prefix) || '/' || i, \(endedAt), i, 1, 'note', \(endedAt), \(endedAt), 'succeeded', 'test', NULL
                    FROM generate_series(1, \(count)) AS i
                    """)
            }
        #endif
        }
    }

    /// The runs stored for `namespace`.
    func runCount(file: TemporaryDatabase, namespace: String) async throws -> Int {
        switch self {
        case .sqlite:
            return try await DatabaseQueue(path: file.path).read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM timerkit_runs WHERE namespace = ?", arguments: [namespace]) ?? 0
            }
        #if canImport(TimerKitPostgres)
        case .postgres:
            return try await TestServer.withClient { client in
                var count: Int64 = 0
                for try await value in try await client.query("SELECT count(*) FROM timerkit_runs WHERE namespace = \(namespace)").decode(Int64.self) {
                    count = value
                }
                return Int(count)
            }
        #endif
        }
    }
}

#if canImport(TimerKitPostgres)
/// The PostgreSQL server the tests use#if canImport(TimerKitPostgres)
/// The PostgreSQL server the tests use: `TIMERKIT_POSTGRES_URL`, which `Scripts/with-postgres`
/// sets. Without it the PostgreSQL tests fail, saying so (never a silent skip).
enum TestServer {
    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "TIMERKIT_POSTGRES_URL is not set: run the tests with a server, `Scripts/with-postgres swift test` (it starts one on loopback)"
        }
    }

    static var url: String? { ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"] }

    static func configuration() throws -> PostgresClient.Configuration {
        guard let url, let configuration = PostgresURL.configuration(url) else { throw Missing() }
        return configuration
    }

    /// Runs `body` with a client of its own on the test server.
    static func withClient<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try configuration())
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await body(client)
    }

    /// `pg_ctl` for the test cluster.
    static var control: String? { ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_CTL"] }

    /// A second cluster, for the tests that stop or restart their server (`Scripts/with-postgres`
    /// starts it): the suites running beside them keep the first.
    static var outageURL: String? { ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_OUTAGE_URL"] }

    /// `pg_ctl` for the second cluster (`restart -m fast -w`; `stop -m fast -w`, then `start -w`
    /// with ``outageLog`` for its output).
    static var outageControl: String? { ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_OUTAGE_CTL"] }

    /// The second cluster's log file.
    static var outageLog: String? { ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_OUTAGE_LOG"] }
}
#endif
