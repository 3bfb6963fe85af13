import ArgumentParser
import TimerKitDurable

#if canImport(TimerKitPostgres)
import TimerKitPostgres
#endif

/// `timerkit durable schema`.
struct DurableSchemaCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Show the database's schema version against this build's, or the SQL that migrates PostgreSQL.",
        usage: "timerkit durable schema [--db <database>] [--sql [--from <version>]]",
        discussion: """
            Changes nothing. Exits 0 when the database is at this build's version, 1 when it is \
            older (or empty): `timerkit durable migrate` brings it up, and 69 when it is newer \
            than this build (a later release wrote it) or cannot be reached.

            --sql prints the SQL of DurableTimers.postgresSchemaSQL(from:) for a DBA to run: from \
            the database's version, or from --from without connecting (then --db is not needed).

            Examples:
              timerkit durable schema --db postgres://app@db.internal/orders
              timerkit durable schema --sql --from 0 > timerkit-schema.sql
            """)

    @OptionGroup var store: DurableStoreOptions

    @Flag(help: "Print the SQL that brings a PostgreSQL database to this build's version.")
    var sql = false

    @Option(help: ArgumentHelp("With --sql: the version to migrate from (0 for an empty database), without connecting.", valueName: "version"))
    var from: Int?

    func validate() throws {
        if from != nil && !sql { throw ValidationError("--from goes with --sql") }
        if let from, !(0...DurableTimers.schemaVersion).contains(from) {
            throw ValidationError("--from must be 0 to \(DurableTimers.schemaVersion) (this build's version), got \(from)")
        }
    }

    func perform() async throws {
        if sql {
            if let from, store.database == nil {
                try printSQL(from: from)
                return
            }
            if case .sqlite = try store.location() {
                throw UsageError("--sql is for PostgreSQL: a SQLite file is migrated by timerkit durable migrate")
            }
            let version: Int
            if let from { version = from } else { version = try await DurableSchemaState.find(store).version }
            try printSQL(from: version)
            return
        }
        let location = try store.location()
        let state = try await DurableSchemaState.find(store)
        let build = DurableTimers.schemaVersion
        switch state {
        case .current:
            Output.line("\(location): schema version \(build), this build's")
        case .behind(0):
            Output.line("\(location): no TimerKit schema yet; this build's is version \(build): run timerkit durable migrate")
            throw ExitCode(DurableExit.nothingDone)
        case .behind(let version):
            Output.line("\(location): schema version \(version), older than this build's (\(build)): run timerkit durable migrate")
            throw ExitCode(DurableExit.nothingDone)
        case .newer(let version):
            throw DurableFailure(
                "\(location): schema version \(version), newer than this build's (\(build)): a later release wrote it; use that release",
                status: DurableExit.unavailable)
        }
    }

    private func printSQL(from version: Int) throws {
        #if canImport(TimerKitPostgres)
        Output.line(DurableTimers.postgresSchemaSQL(from: version))
        #else
        throw DurableFailure(
            "this timerkit was built without PostgreSQL (TIMERKIT_WITHOUT_POSTGRES was set): it has no PostgreSQL SQL", status: DurableExit.badInput)
        #endif
    }
}
