import ArgumentParser
import Foundation
import TimerKitDurable

#if canImport(TimerKitPostgres)
import TimerKitPostgres
#endif

/// Where the timers are: `--db`, `--namespace` and `--timeout`, shared by every `timerkit durable`
/// subcommand.
struct DurableStoreOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: ArgumentHelp(
            "The database: sqlite:PATH (or a bare path) or postgres://USER@HOST:PORT/DB; default: $TIMERKIT_DB.", valueName: "database"))
    var database: String?

    @Option(help: ArgumentHelp("The namespace of the timers.", valueName: "name"))
    var namespace = "default"

    @Option(
        help: ArgumentHelp("How long to wait for the database (a lock, a server) before giving up with status 69.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--timeout") })
    var timeout: Duration = .seconds(5)

    /// The database `--db` (or `TIMERKIT_DB`) names.
    func location(environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> DurableLocation {
        guard let text = database ?? environment["TIMERKIT_DB"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw UsageError("no database: give --db sqlite:PATH or --db postgres://USER@HOST:PORT/DB, or set TIMERKIT_DB")
        }
        return try DurableLocation(text)
    }

    /// Opens the timers of the namespace. `upgrade` is ``DurableTimers/SchemaUpgrade/verifyOnly``
    /// for every command but `migrate`: the tool never changes a schema on the side. A SQLite file
    /// that does not exist is refused (opening would create it), unless `creating`.
    func open(upgrade: DurableTimers.SchemaUpgrade = .verifyOnly, creating: Bool = false) async throws -> DurableTimers {
        var options = DurableTimers.Options()
        options.schemaUpgrade = upgrade
        options.busyTimeout = timeout
        // Failures reach the command as thrown errors; nothing runs in the background.
        options.onError = { _ in }
        switch try location() {
        case .sqlite(let path):
            if !creating { try DurableLocation.requireFile(path) }
            return try DurableTimers(path: path, namespace: namespace, options: options)
        case .postgres(let url):
            #if canImport(TimerKitPostgres)
            guard let configuration = PostgresURL.configuration(url) else { throw DurableLocation.invalidPostgresURL(url) }
            return try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
            #else
            throw DurableLocation.withoutPostgres(url)
            #endif
        }
    }
}

/// A database as `--db` names it.
enum DurableLocation: Equatable, CustomStringConvertible {
    /// A SQLite file.
    case sqlite(path: String)
    /// A PostgreSQL server: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`.
    case postgres(url: String)

    /// Reads `sqlite:PATH`, `sqlite://PATH`, `postgres://…`, `postgresql://…`, or a bare path (SQLite).
    init(_ text: String) throws(UsageError) {
        let trimmed = String(text.trimmingWhitespace)
        guard !trimmed.isEmpty else { throw UsageError("empty --db: give sqlite:PATH or postgres://USER@HOST:PORT/DB") }
        let lowered = trimmed.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            self = .postgres(url: trimmed)
        } else if lowered.hasPrefix("sqlite:") {
            var path = trimmed.dropFirst("sqlite:".count)
            if path.hasPrefix("//") { path = path.dropFirst(2) }
            guard !path.isEmpty else { throw UsageError("--db sqlite: needs a path, as in sqlite:timers.sqlite") }
            self = .sqlite(path: String(path))
        } else if let scheme = trimmed.range(of: "://").map({ trimmed[..<$0.lowerBound] }), !scheme.contains("/") {
            throw UsageError("unknown database '\(trimmed)': use sqlite:PATH or postgres://USER@HOST:PORT/DB")
        } else {
            self = .sqlite(path: trimmed)
        }
    }

    /// `sqlite:PATH`, or the URL without its password.
    var description: String {
        switch self {
        case .sqlite(let path):
            return "sqlite:\(path)"
        case .postgres(let url):
            guard var components = URLComponents(string: url), components.password != nil else { return url }
            components.password = "***"
            return components.string ?? url
        }
    }

    /// Refuses a SQLite file that does not exist: opening it would create an empty one.
    static func requireFile(_ path: String) throws(DurableFailure) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw DurableFailure(
                "no database at \(path) (timerkit durable migrate --db sqlite:\(path) creates one)", status: DurableExit.unavailable)
        }
    }

    /// The refusal of a URL that `PostgresURL` does not read.
    static func invalidPostgresURL(_ url: String) -> UsageError {
        UsageError("invalid PostgreSQL URL '\(url)': expected postgres://USER[:PASSWORD]@HOST[:PORT]/DB")
    }

    #if !canImport(TimerKitPostgres)
    /// The refusal of a `postgres://` database by a build without PostgreSQL.
    static func withoutPostgres(_ url: String) -> DurableFailure {
        DurableFailure(
            "this timerkit was built without PostgreSQL (TIMERKIT_WITHOUT_POSTGRES was set): it cannot open \(url); use a build with it",
            status: DurableExit.badInput)
    }
    #endif
}
