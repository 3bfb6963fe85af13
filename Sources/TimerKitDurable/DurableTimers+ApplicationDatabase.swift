import Foundation
import GRDB
import TimerKit

extension DurableTimers {
    /// Makes a runner in the application's own SQLite database — its GRDB `DatabasePool` or
    /// `DatabaseQueue`, whose configuration (WAL, busy timeout, durability) it keeps — with the
    /// timers' tables beside the application's. Then a timer can be written by the application's
    /// own transaction, with its business rows: ``schedule(key:at:handler:payload:misfire:ifExists:in:)``.
    ///
    /// ```swift
    /// let database = try DatabasePool(path: "app.sqlite")
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
    /// - Throws: As ``init(path:namespace:clock:options:)``.
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
        return try joined(db) { db in
            try SQLiteTimerStore.put(record, conflict: ifExists, db)
        } learning: { stored, machine in
            stored ? machine.load(StoredKey(key), readyAt: record.readyAt, handler: handler) : []
        }
    }

    /// Schedules a one-shot `delay` from now inside the application's transaction on `db`; see
    /// ``schedule(key:at:handler:payload:misfire:ifExists:in:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, after delay: Duration, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace,
        in db: Database
    ) throws(DurableTimerError) -> Bool {
        try schedule(
            key: key, at: Date(nanosecondsSince1970: try deadline(after: delay)), handler: handler, payload: payload, misfire: misfire,
            ifExists: ifExists, in: db)
    }

    /// Removes the timer under `key` inside the application's transaction on `db`; the runner
    /// forgets it (and cancels its run here) once the transaction commits. See ``cancel(key:)``.
    @discardableResult
    public func cancel(key: String, in db: Database) throws(DurableTimerError) -> CancelOutcome {
        guard DurableLimits.isValid(key: key) else { return .notFound }
        let now = now()
        let removal = try joined(db) { db in
            try SQLiteTimerStore.delete(namespace: namespace, key: key, now: now, db)
        } learning: { removal, machine in
            removal == nil ? [] : machine.removed(StoredKey(key))
        }
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
        let moved = try joined(db) { db in
            try SQLiteTimerStore.move(namespace: namespace, key: key, due: due, readyAt: due, db)
        } learning: { moved, machine in
            moved.map { machine.load(StoredKey(key), readyAt: $0.readyAt, handler: $0.handler) } ?? []
        }
        guard moved != nil else { throw .notFound(key) }
    }

    /// Runs `write` on the application's `db` (inside its transaction), and tells the runner what
    /// `learning` makes of its result once that transaction commits — nothing if it rolls back.
    private func joined<T: Sendable>(
        _ db: Database, _ write: (Database) throws -> T,
        learning change: @escaping @Sendable (T, inout RunnerStateMachine) -> [RunnerStateMachine.Action]
    ) throws(DurableTimerError) -> T {
        guard let store = store as? SQLiteTimerStore, store.isApplicationDatabase else {
            throw .store(reason: "a call with `in: db` needs a runner on the application's database: DurableTimers(database:)")
        }
        let result = try store.joining(db, write)
        let runner = runner
        db.afterNextTransaction(onCommit: { _ in runner.transition { change(result, &$0) } })
        return result
    }
}
