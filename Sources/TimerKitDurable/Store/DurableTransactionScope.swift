/// The application's own transaction that a store's calls join, for the duration of a task-local
/// scope: a store whose identity matches runs its statements on `connection` (its own kind of
/// connection) instead of taking one of its pool, and the runner leaves what it wrote to the
/// commit's notifications (the transaction may still roll back).
///
/// A store offers it publicly in its own terms (PostgreSQL: ``DurableTimers`` `inTransaction(on:_:)`
/// in TimerKitPostgres).
package struct DurableTransactionScope: Sendable {
    /// The store whose calls join the transaction.
    package let store: ObjectIdentifier
    /// The application's connection, in the store's own type.
    package let connection: any Sendable

    package init(store: AnyObject, connection: any Sendable) {
        self.store = ObjectIdentifier(store)
        self.connection = connection
    }

    /// The scope the current task is in, if any.
    @TaskLocal package static var current: DurableTransactionScope?

    /// Runs `body` outside any scope: the runner's own work (its tasks, its loads) never joins
    /// the application's transaction, even when a call in the scope starts it.
    package static func outside<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await $current.withValue(nil) { try await body() }
    }

    /// The connection of the current scope when it is `store`'s.
    package static func connection(for store: AnyObject) -> (any Sendable)? {
        guard let current, current.store == ObjectIdentifier(store) else { return nil }
        return current.connection
    }
}
