import PostgresNIO
import TimerKit
import TimerKitDurable

extension DurableTimers {
    /// Brings the schema of the PostgreSQL database at `configuration` to
    /// ``DurableTimers/schemaVersion``, as a deploy step: run it with a role that may create
    /// tables, then start the instances with a role that may not and
    /// ``DurableTimers/SchemaUpgrade/verifyOnly``. Safe beside running instances and from several
    /// processes at once (one transaction behind the instances' migration lock).
    ///
    /// - Parameters:
    ///   - configuration: Where the database is, with a role that may create tables.
    ///   - timeout: How long to wait for the database.
    /// - Returns: The versions applied, in order; `nil` when the database was current.
    /// - Throws: ``DurableTimerError/schema(reason:)`` for a database newer than this build or a
    ///   foreign `timerkit_timers` table, ``DurableTimerError/unreachable(reason:)`` when the
    ///   server does not answer within `timeout`, ``DurableTimerError/store(reason:)`` when it
    ///   refuses a statement (no permission).
    @discardableResult
    public static func migrate(postgres configuration: PostgresClient.Configuration, timeout: Duration = .seconds(30)) async throws(DurableTimerError)
        -> ClosedRange<Int>?
    {
        let store = try await PostgresTimerStore(
            configuration: configuration, timeSource: .host, notifyWithin: .zero, timeout: timeout, maximumSkew: .seconds(1), upgrade: .automatic,
            onError: { _ in })
        await store.close()
        return store.migrated
    }

    /// The SQL that brings a PostgreSQL database at schema `version` to
    /// ``DurableTimers/schemaVersion``, for a DBA or a migration tool: one transaction, behind the
    /// lock the instances take, every statement safe to run again. `0` (the default) for an empty
    /// database; `1` for one written by TimerKit 0.1.0. The version of a database is
    /// `SELECT max(version) FROM timerkit_schema` (1 when only `timerkit_timers` exists).
    ///
    /// - Parameter version: The version the database is at.
    public static func postgresSchemaSQL(from version: Int = 0) -> String {
        PostgresTimerStore.script(from: version)
    }

    /// The `GRANT` statements that let `role` run timers on a migrated database, and no more: rows
    /// of `timerkit_timers`, reading `timerkit_schema`, the occurrence sequence and the clock
    /// function. No DDL: start such a role's runners with ``DurableTimers/SchemaUpgrade/verifyOnly``
    /// (or the default, which changes nothing on a current database).
    ///
    /// - Parameter role: The application's role (quoted as an identifier).
    public static func postgresGrants(to role: String) -> String {
        PostgresTimerStore.grants(to: role)
    }
}
