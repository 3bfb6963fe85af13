import PostgresNIO
import TimerKit
import TimerKitDurable

extension DurableTimers {
    /// Connects to PostgreSQL and makes a runner for the timers of `namespace` there, shared with
    /// every other instance that uses the same database and namespace: each occurrence runs on one
    /// instance at a time. Creates the schema if it is missing, and migrates an older one
    /// (``DurableTimers/Options/schemaUpgrade``; safe from every instance at once).
    /// Call ``DurableTimers/run()`` (or ``DurableTimers/start()``) to fire them.
    ///
    /// Time is the database's: due times, leases and "now" are read from the server's clock, and
    /// the instance arms its engine at its own clock's reading of them (it measures the offset at
    /// each connection and every ten seconds).
    ///
    /// - Parameters:
    ///   - configuration: Where the database is and how to reach it (postgres-nio's).
    ///   - maximumClockSkew: An offset between this host's clock and the database's beyond which
    ///     ``DurableTimerError/clockSkew(milliseconds:)`` is reported to ``DurableTimers/Options/onError``.
    /// A database that cannot be reached does not fail the initializer: it reports
    /// ``DurableTimerError/unreachable(reason:)`` to ``DurableTimers/Options/onError`` and goes on
    /// opening in the background, retrying with a pause that doubles up to five seconds (each
    /// failure reported). Meanwhile calls wait for it within ``DurableTimers/Options/busyTimeout``
    /// and then throw `unreachable`; ``DurableTimers/run()`` waits until it answers — so an
    /// instance that starts before its database (a deploy, a failover) needs no restart.
    ///
    /// The pool of `configuration` serves calls in two lanes: a quarter of its connections (at
    /// least one, when it has two or more) is kept for renewals of held claims and the ends of
    /// runs, so that the application's own calls cannot starve them. `LISTEN` has a connection of
    /// its own beside the pool.
    ///
    /// - Throws: ``DurableTimerError/store(reason:)`` when the database
    ///   refuses the schema (no permission, say), ``DurableTimerError/schema(reason:)`` for a
    ///   schema newer than this build's (or older, with ``DurableTimers/SchemaUpgrade/verifyOnly``),
    ///   ``DurableTimerError/invalidKey(_:)`` for an invalid namespace,
    ///   ``DurableTimerError/invalidDuration(_:)`` for options out of range (checked before it
    ///   connects).
    public convenience init(
        postgres configuration: PostgresClient.Configuration, namespace: String = "default", options: Options = Options(),
        maximumClockSkew: Duration = .seconds(1)
    ) async throws(DurableTimerError) {
        try await self.init(postgres: configuration, namespace: namespace, options: options, maximumClockSkew: maximumClockSkew, hostClockSkew: .zero)
    }

    /// For the fleet tests: a host whose clock reads `hostClockSkew` off the true time, and a
    /// listening connection checked every `listenerCheck`.
    package convenience init(
        postgres configuration: PostgresClient.Configuration, namespace: String = "default", options: Options = Options(),
        maximumClockSkew: Duration = .seconds(1), hostClockSkew: Duration, listenerCheck: Duration = .seconds(10)
    ) async throws(DurableTimerError) {
        // Before anything connects or migrates: bad options change nothing in the database.
        try options.validate(namespace: namespace)
        let store = try await PostgresTimerStore(
            configuration: configuration, timeSource: .database, notifyWithin: Options.longest, timeout: options.busyTimeout, maximumSkew: maximumClockSkew,
            upgrade: options.schemaUpgrade, hostSkew: hostClockSkew.saturatingNanoseconds, listenerCheck: listenerCheck, waitsForDatabase: true,
            onError: options.onError)
        try self.init(store: store, namespace: namespace, clock: .wall, options: options)
    }
}
