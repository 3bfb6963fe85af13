import ArgumentParser
import TimerKitDurable

/// The exit statuses of `timerkit durable`, in one table (the help of `timerkit durable` and the
/// tool's discussion say the same).
enum DurableExit {
    /// Done.
    static let ok: Int32 = 0
    /// A key that is not stored, a filter that matched nothing, a database whose schema needs
    /// `migrate` (for `schema`): nothing was done.
    static let nothingDone: Int32 = 1
    /// Bad input: an unknown option, an invalid key, date or database URL.
    static let badInput: Int32 = 64
    /// The database cannot be used: unreachable, missing, locked, damaged, or its schema is not
    /// this build's (`EX_UNAVAILABLE`).
    static let unavailable: Int32 = 69

    /// The status a durable-timer error exits with.
    static func status(of error: DurableTimerError) -> Int32 {
        switch error {
        case .notFound: nothingDone
        case .invalidKey, .invalidDate, .invalidDuration, .invalidRule, .unknownHandler, .payload, .keyInUse: badInput
        // The store's failures (cannotOpen, corrupt, locked, full, store, schema, unreachable,
        // clockSkew), and any case added later.
        default: unavailable
        }
    }

    /// What `timerkit durable --help` says about them.
    static let help = """
        Exit status:
          0     done
          1     nothing done: a key is not stored (the others given are still
                done), a filter matched no timer; schema: the database needs
                migrate
          64    bad input (an unknown option, an invalid key, date or --db)
          69    the database cannot be used: unreachable, missing, locked,
                damaged, or its schema is not this build's (run migrate)
        """
}

/// A failure of a `timerkit durable` command that is not the store's: one line on stderr and an
/// exit status.
struct DurableFailure: Error, CustomStringConvertible {
    let message: String
    let status: Int32

    init(_ message: String, status: Int32) {
        self.message = message
        self.status = status
    }

    var description: String { message }
}

/// A `timerkit durable` subcommand: its errors become one line on stderr and an exit status.
protocol DurableSubcommand: AsyncParsableCommand {
    /// Where the timers are.
    var store: DurableStoreOptions { get }

    /// Does the work; ``DurableTimerError``, ``DurableFailure`` and ``UsageError`` are reported
    /// by `run()`.
    func perform() async throws
}

extension DurableSubcommand {
    func run() async throws {
        let name = "timerkit durable \(Self.configuration.commandName ?? "")"
        do {
            try await perform()
        } catch let error as DurableTimerError {
            Output.error("\(name): \(Self.message(for: error, store: store))")
            throw ExitCode(DurableExit.status(of: error))
        } catch let failure as DurableFailure {
            Output.error("\(name): \(failure.message)")
            throw ExitCode(failure.status)
        } catch let error as UsageError {
            // As ArgumentParser reports bad input, with this subcommand's usage (not the tool's).
            Output.error(
                """
                Error: \(error.message)
                Usage: \(TimerKitCommand.aligned(Self.usage))
                  See '\(name) --help' for more information.
                """)
            throw ExitCode(DurableExit.badInput)
        }
    }

    /// The subcommand's usage line(s).
    static var usage: String {
        configuration.usage ?? "timerkit durable \(configuration.commandName ?? "") [<options>]"
    }

    /// One line for a store's error: its own description, but for a server that does not answer,
    /// whose nested reasons say less than where and how long.
    static func message(for error: DurableTimerError, store: DurableStoreOptions) -> String {
        guard case .unreachable = error, let location = try? store.location() else { return "\(error)" }
        return "cannot reach the database \(location) within \(DurationText.describe(store.timeout)) (--timeout): is the server up, and the URL right?"
    }
}
