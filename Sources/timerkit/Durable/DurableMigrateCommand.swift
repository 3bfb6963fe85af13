import ArgumentParser
import TimerKitDurable

#if canImport(TimerKitPostgres)
import TimerKitPostgres
#endif

/// `timerkit durable migrate`.
struct DurableMigrateCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring the database's schema to this build's version (the only command that changes it).",
        usage: "timerkit durable migrate [--db <database>] [--timeout <duration>]",
        discussion: """
            A deploy step: run it with a role that may create tables, then start the runners with \
            SchemaUpgrade.verifyOnly. It creates a SQLite file (and the tables of an empty \
            database). Safe beside running instances and from several processes at once. Exits 0 \
            when the database is at this build's version afterwards, migrated or not; 69 when it \
            is newer, cannot be reached, or the role may not change it.

            Example: timerkit durable migrate --db postgres://owner@db.internal/orders
            """)

    @OptionGroup var store: DurableStoreOptions

    func perform() async throws {
        let location = try store.location()
        let build = DurableTimers.schemaVersion
        switch location {
        case .sqlite(let path):
            let before = try await DurableSchemaState.find(store)
            if before == .current {
                Output.line("\(location): schema version \(build) already; nothing to do")
                return
            }
            var options = DurableTimers.Options()
            options.busyTimeout = store.timeout
            options.onError = { _ in }
            _ = try DurableTimers(path: path, namespace: store.namespace, options: options)
            Output.line("\(location): migrated from schema version \(before.version) to \(build)")
        case .postgres(let url):
            #if canImport(TimerKitPostgres)
            guard let configuration = PostgresURL.configuration(url) else { throw DurableLocation.invalidPostgresURL(url) }
            if let applied = try await DurableTimers.migrate(postgres: configuration, timeout: store.timeout) {
                Output.line("\(location): migrated from schema version \(applied.lowerBound - 1) to \(applied.upperBound)")
            } else {
                Output.line("\(location): schema version \(build) already; nothing to do")
            }
            #else
            throw DurableLocation.withoutPostgres(url)
            #endif
        }
    }
}
