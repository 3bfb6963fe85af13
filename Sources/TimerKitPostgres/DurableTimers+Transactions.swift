import PostgresNIO
import TimerKit
import TimerKitDurable

extension DurableTimers {
    /// Runs `body` with this runner's calls made on `connection`, inside the transaction the
    /// application has open there: the business row and its timer commit together or roll back
    /// together.
    ///
    /// ```swift
    /// try await client.withTransaction(logger: logger) { connection in
    ///     try await connection.query("INSERT INTO orders (id) VALUES (\(order.id))", logger: logger)
    ///     try await timers.inTransaction(on: connection) {
    ///         try await timers.schedule(key: "order/\(order.id)/expiry", after: .seconds(1_800), handler: "expire", payload: order)
    ///     }
    /// }
    /// ```
    ///
    /// This runner's writes and reads within `body` join the transaction — each `schedule` form,
    /// `cancel(key:)`, `reschedule(key:at:)`, `postpone(key:by:)`, `retry(key:)`, the pauses and
    /// resumes, and the reads (which see the transaction's own writes); the runner's own work
    /// (its claims, runs, renewals and loads) never does, whatever task starts it, and neither
    /// does `fire(key:)`, which asks this instance to run a stored timer now. Nothing is
    /// visible to other connections before the commit. The notification that wakes the
    /// instances goes out at the commit (PostgreSQL sends a transaction's `NOTIFY` then), and
    /// none at a rollback: a rolled-back timer never wakes an instance, and a committed one is
    /// armed as promptly as one scheduled on its own. A process that dies before the commit
    /// leaves neither the row nor the timer: PostgreSQL rolls back the transaction of a
    /// connection that ends.
    ///
    /// Keep the transaction short: a cancel, a replacing schedule or a pause of a timer that an
    /// instance holds locks its row until the commit, and that instance's renewal of its claims
    /// waits for the lock — a transaction held open for longer than a lease costs those claims.
    ///
    /// It neither begins, commits nor rolls back: the caller's transaction does (postgres-nio's
    /// `withTransaction`, or its own `BEGIN`). The calls run on the caller's connection without
    /// the runner's own timeout (``Options/busyTimeout``) or lanes; the caller's timeouts apply.
    /// The connection must be to the runner's database; calls of other runners within `body`
    /// use their own connections as usual.
    ///
    /// - Throws: What `body` throws (a ``DurableTimerError`` from a call: the caller's
    ///   transaction should then roll back, as `withTransaction` does);
    ///   ``DurableTimerError/store(reason:)`` when this runner's store is not PostgreSQL.
    @discardableResult
    public func inTransaction<Result: Sendable>(on connection: PostgresConnection, _ body: () async throws -> Result) async throws -> Result {
        guard let store = store as? PostgresTimerStore else {
            throw DurableTimerError.store(reason: "inTransaction(on:) joins a PostgreSQL transaction, and this runner's store is not PostgreSQL")
        }
        return try await DurableTransactionScope.$current.withValue(DurableTransactionScope(store: store, connection: connection)) {
            try await body()
        }
    }
}
