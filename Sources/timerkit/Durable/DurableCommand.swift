import ArgumentParser

/// `timerkit durable <subcommand>`: durable timers in a SQLite file or a PostgreSQL database, seen
/// and changed from the command line.
struct DurableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "durable",
        abstract: "Inspect and change durable timers in a SQLite file or a PostgreSQL database.",
        discussion: """
            Every subcommand takes --db (sqlite:PATH, a bare path, or
            postgres://USER@HOST:PORT/DB; default: $TIMERKIT_DB) and --namespace (default:
            default). Only migrate changes the database's schema: the others refuse a
            database whose schema is not this build's (status 69).

            Examples:
              timerkit durable ls --db timers.sqlite --status parked
              timerkit durable show --db timers.sqlite sale/42
              timerkit durable why --db timers.sqlite sale/42
              timerkit durable retry --db timers.sqlite --status parked --handler sale.end
              timerkit durable serve --db timers.sqlite --listen 127.0.0.1:8080
              TIMERKIT_DB=postgres://app@db/orders timerkit durable ls --json --all

            \(DurableExit.help)
            """,
        subcommands: [
            DurableListCommand.self, DurableShowCommand.self, DurableWhyCommand.self, DurablePlanCommand.self, DurableHistoryCommand.self,
            DurableStatsCommand.self, DurableCancelCommand.self, DurableRetryCommand.self, DurableFireCommand.self, DurablePauseCommand.self,
            DurableResumeCommand.self, DurableServeCommand.self,
            DurableSchemaCommand.self, DurableMigrateCommand.self
        ])
}
