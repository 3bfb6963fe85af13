import Foundation
import GRDB
import TimerKit

extension DurableTimers {
    /// Makes a runner in the application's own SQLite database — its GRDB `DatabasePool` or
    /// `DatabaseQueue`, whose configuration (journal mode, busy timeout, durability) it keeps — with the
    /// timers' tables beside the application's. Then a timer can be written by the application's
    /// own transaction, with its business rows: ``schedule(key:at:handler:payload:misfire:ifExists:in:)``.
    ///
    /// ```swift
    /// var configuration = Configuration()
    /// configuration.busyMode = .timeout(5)
    /// let database = try DatabasePool(path: "app.sqlite", configuration: configuration)
    /// let timers = try DurableTimers(database: database)
    /// try database.write { db in
    ///     try db.execute(sql: "INSERT INTO orders (id) VALUES (?)", arguments: [order.id])
    ///     try timers.schedule(key: "order/\(order.id)/expiry", after: .seconds(1_800), handler: "order.expire", payload: order, in: db)
    /// }
    /// ```
    ///
    /// Creates the timers' schema if it is missing and migrates an older one
    /// (``Options/schemaUpgrade``). Call ``run()`` (or ``start()``) to fire them.
    ///
    /// ``Options/busyTimeout`` and ``Options/durability`` do not apply: the database's own
    /// configuration does. Its `busyMode` must wait (`.timeout(seconds)`): GRDB's default fails a
    /// write at once while another connection writes, which would cost the runner its claims.
    ///
    /// - Throws: As ``init(path:namespace:clock:options:)``; ``DurableTimerError/cannotOpen(path:reason:)``
    ///   for a database whose `busyMode` is `.immediateError`.
    public convenience init(database: any DatabaseWriter, namespace: String = "default", clock: TimerClock = .wall, options: Options = Options())
        throws(DurableTimerError)
    {
        let store = try SQLiteTimerStore(writer: database, upgrade: options.schemaUpgrade, executor: clock.taskExecutor)
        try self.init(store: store, namespace: namespace, clock: clock, options: options)
    }

    /// Schedules a one-shot at `date` inside the application's transaction on `db` (a
    /// `write { db in … }` of the database the runner was made on): it commits or rolls back
    /// with the application's rows, and the runner arms it once the transaction commits.
    ///
    /// - Returns: `false` if `ifExists` is ``DurableConflict/keep`` and the key holds a timer.
    /// - Throws: As ``schedule(key:at:handler:payload:misfire:ifExists:)``;
    ///   ``DurableTimerError/store(reason:)`` outside a transaction, or for a runner that is not
    ///   on an application's database (``init(database:namespace:clock:options:)``). The
    ///   application's transaction should then roll back (GRDB's `write` does when its body throws).
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, at date: Date, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace,
        in db: Database
    ) throws(DurableTimerError) -> Bool {
        let record = try record(key: key, handler: handler, payload: payload, recurrence: .none, misfire: misfire, due: DurableLimits.nanoseconds(of: date))
        return try traced(record) { record throws(DurableTimerError) in
            try joined(db, key: key) { db in try SQLiteTimerStore.put(record, conflict: ifExists, db) }
        }
    }

    /// Schedules a one-shot `delay` from now inside the application's transaction on `db`; see
    /// ``schedule(key:at:handler:payload:misfire:ifExists:in:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, after delay: Duration, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace,
        in db: Database
    ) throws(DurableTimerError) -> Bool {
        let record = try record(key: key, handler: handler, payload: payload, recurrence: .none, misfire: misfire, due: deadline(after: delay))
        return try traced(record) { record throws(DurableTimerError) in
            try joined(db, key: key) { db in try SQLiteTimerStore.put(record, conflict: ifExists, db) }
        }
    }

    /// Removes the timer under `key` inside the application's transaction on `db`; the runner
    /// forgets it (and cancels its run here) once the transaction commits. See ``cancel(key:)``.
    @discardableResult
    public func cancel(key: String, in db: Database) throws(DurableTimerError) -> CancelOutcome {
        guard DurableLimits.isValid(key: key) else { return .notFound }
        let now = now()
        let removal = try joined(db, key: key) { db in try SQLiteTimerStore.delete(namespace: namespace, key: key, now: now, db) }
        guard let removal else { return .notFound }
        return removal.wasClaimed ? .cancelledWhileRunning : .cancelled
    }

    /// Moves the timer's next occurrence to `date` inside the application's transaction on `db`;
    /// the runner re-arms it once the transaction commits. See ``reschedule(key:at:)``.
    ///
    /// - Throws: As ``reschedule(key:at:)``, and as ``schedule(key:at:handler:payload:misfire:ifExists:in:)``.
    public func reschedule(key: String, at date: Date, in db: Database) throws(DurableTimerError) {
        let due = try DurableLimits.nanoseconds(of: date)
        guard DurableLimits.isValid(key: key) else { throw .notFound(key) }
        let moved = try joined(db, key: key) { db in try SQLiteTimerStore.move(namespace: namespace, key: key, due: due, readyAt: due, db) }
        guard moved != nil else { throw .notFound(key) }
    }

    /// Runs `write` on the application's `db` (inside its transaction) and, once the transaction
    /// commits, tells the runner what is stored under `key` then — not what `write` did, which a
    /// savepoint rolled back inside the committed transaction would have undone. Nothing if the
    /// transaction rolls back.
    private func joined<T>(_ db: Database, key: String, _ write: (Database) throws -> T) throws(DurableTimerError) -> T {
        guard let store = store as? SQLiteTimerStore, store.isApplicationDatabase else {
            throw .store(reason: "a call with `in: db` needs a runner on the application's database: DurableTimers(database:)")
        }
        let result = try store.joining(db, write)
        let (runner, namespace) = (runner, namespace)
        db.afterNextTransaction(onCommit: { db in
            let stored: DurableTimerRecord?
            do {
                stored = try SQLiteTimerStore.committed(namespace: namespace, key: key, db)
            } catch {
                return  // the runner's next load of the horizon learns it instead
            }
            runner.transition { machine in
                guard let stored else { return machine.removed(StoredKey(key)) }
                return stored.isParked ? [] : machine.load(StoredKey(key), readyAt: stored.readyAt, handler: stored.handler)
            }
        })
        return result
    }
}
