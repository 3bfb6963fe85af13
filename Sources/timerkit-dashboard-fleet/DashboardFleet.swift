// One instance of a demo fleet for the durable-timer dashboard (`timerkit durable serve`): the
// dashboard's browser test (Scripts/run-dashboard-browser-test) starts two beside the server, and
// a person can start them to see the dashboard with something in it.
//
// usage: timerkit-dashboard-fleet DB NAMESPACE [--seed] [--succeed-marker PATH] [--name NAME]
//
// DB is sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE. Registers three handlers
// and runs the namespace's timers until SIGTERM or SIGINT, then shuts down gracefully (exit 0):
//   email.send      succeeds at once;
//   invoice.charge  throws "card declined" unless the file at --succeed-marker exists; two
//                   attempts a second apart, so a declined charge is parked within seconds;
//   report.daily    succeeds (the repeating timers').
// Each run prints "ran HANDLER KEY attempt N" (a declined charge "declined invoice.charge KEY
// attempt N") on stdout, one write(2) a line.
//
// --seed schedules, before the runner starts, through a second instance on the same database and
// namespace that is never started and registers `legacy.cleanup` besides (so its timer is an
// orphan: no running instance has that handler):
//   email/1 … email/30           email.send, ten minutes apart from now + 10 min to now + 5 h;
//   report/daily, report/hourly  report.daily, every 2 s;
//   invoice/42, invoice/43       invoice.charge, due now (both park);
//   cleanup/old                  legacy.cleanup, due now (an orphan);
//   <script>alert(1)</script> and "><img src=x onerror=alert(1)>
//                                email.send in an hour, their payloads holding such text too —
//                                for the dashboard's escaping.
// and prints "seeded". Once the runner has started (and recorded itself as an instance) it prints
// "ready NAME" (NAME: --name, default "fleet"). Errors the runner reports go to stderr as
// "NAME: ERROR".
//
// The runners keep 1,000 runs per timer in their history (the default keeps 10), so that the
// history of a repeating timer grows through a test. On SQLite, which tells a runner of no change
// made by another process, the horizon is 5 s: what the dashboard does reaches the runners within
// seconds (PostgreSQL notifies them at once).
import Foundation
import TimerKit
import TimerKitDurable

#if canImport(TimerKitPostgres)
import TimerKitPostgres
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
enum DashboardFleet {
    static let usage = "usage: timerkit-dashboard-fleet DB NAMESPACE [--seed] [--succeed-marker PATH] [--name NAME]  (DB: sqlite:PATH or postgres://…)"

    static func main() async {
        // Signals are taken from here on, so that one that comes while seeding is not lost.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let (terminations, terminated) = AsyncStream<Int32>.makeStream()
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { terminated.yield(number) }
            source.resume()
            return source
        }

        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            let value = arguments[index + 1]
            arguments.removeSubrange(index...(index + 1))
            return value
        }
        func flag(_ name: String) -> Bool {
            guard let index = arguments.firstIndex(of: name) else { return false }
            arguments.remove(at: index)
            return true
        }
        let name = option("--name") ?? "fleet"
        let marker = option("--succeed-marker")
        let seed = flag("--seed")
        guard arguments.count == 2, !arguments.contains(where: { $0.hasPrefix("--") }), let database = Database(arguments[0]) else {
            fail(usage, status: 64)
        }
        let namespace = arguments[1]

        var options = DurableTimers.Options()
        options.history = DurableTimers.History(runsPerTimer: 1_000)
        if case .sqlite = database { options.horizon = .seconds(5) }
        options.onError = { error in FileHandle.standardError.write(Data("\(name): \(error)\n".utf8)) }

        do {
            let timers = try await database.open(namespace: namespace, options: options)
            try await registerHandlers(on: timers, marker: marker)
            if seed {
                try await self.seed(database, namespace: namespace, options: options, marker: marker)
                say("seeded")
            }
            await timers.start()
            say("ready \(name)")
            for await number in terminations {
                FileHandle.standardError.write(Data("\(name): signal \(number), shutting down\n".utf8))
                break
            }
            await timers.shutdown(gracePeriod: .seconds(10))
        } catch {
            fail("\(name): \(error)", status: 1)
        }
        for source in sources { source.cancel() }
    }

    // MARK: Handlers

    /// An e-mail to send.
    struct Email: Codable, Sendable {
        var to: String
        var subject: String
    }

    /// An invoice to charge.
    struct Invoice: Codable, Sendable {
        var number: Int
        var amountCents: Int
    }

    /// A report to make.
    struct Report: Codable, Sendable {
        var name: String
    }

    /// An old handler's work: no running instance has its handler.
    struct Cleanup: Codable, Sendable {
        var olderThanDays: Int
    }

    /// What `invoice.charge` throws while the marker file is missing.
    struct CardDeclined: Error, CustomStringConvertible {
        var description: String { "card declined" }
    }

    /// The three handlers every instance runs.
    static func registerHandlers(on timers: DurableTimers, marker: String?) async throws {
        try await timers.register("email.send", payload: Email.self) { _, fire in
            say("ran email.send \(fire.key) attempt \(fire.attempt)")
        }
        try await timers.register(
            "invoice.charge", payload: Invoice.self, retry: DurableRetryPolicy(maxAttempts: 2, delay: .seconds(1), maxDelay: .seconds(1))
        ) { _, fire in
            guard let marker, FileManager.default.fileExists(atPath: marker) else {
                say("declined invoice.charge \(fire.key) attempt \(fire.attempt)")
                throw CardDeclined()
            }
            say("ran invoice.charge \(fire.key) attempt \(fire.attempt)")
        }
        try await timers.register("report.daily", payload: Report.self) { _, fire in
            say("ran report.daily \(fire.key) attempt \(fire.attempt)")
        }
    }

    // MARK: Seeding

    /// The demo's timers, scheduled through an instance that is never started and knows
    /// `legacy.cleanup` besides the three handlers.
    static func seed(_ database: Database, namespace: String, options: DurableTimers.Options, marker: String?) async throws {
        let seeder = try await database.open(namespace: namespace, options: options)
        try await registerHandlers(on: seeder, marker: marker)
        try await seeder.register("legacy.cleanup", payload: Cleanup.self) { _, _ in }
        for number in 1...30 {
            try await seeder.schedule(
                key: "email/\(number)", after: .seconds(600 * number), handler: "email.send",
                payload: Email(to: "customer\(number)@example.com", subject: "Reminder \(number)"))
        }
        for report in ["daily", "hourly"] {
            try await seeder.schedule(key: "report/\(report)", every: .seconds(2), handler: "report.daily", payload: Report(name: report))
        }
        for number in [42, 43] {
            try await seeder.schedule(
                key: "invoice/\(number)", after: .zero, handler: "invoice.charge", payload: Invoice(number: number, amountCents: 1_999 + number))
        }
        try await seeder.schedule(key: "cleanup/old", after: .zero, handler: "legacy.cleanup", payload: Cleanup(olderThanDays: 30))
        // Keys and payloads that a page that does not escape would run as markup.
        for key in ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>"] {
            try await seeder.schedule(
                key: key, after: .seconds(3_600), handler: "email.send",
                payload: Email(to: "<script>alert(2)</script>", subject: "\"><img src=x onerror=alert(2)>"))
        }
        await seeder.shutdown()
    }

    // MARK: Plumbing

    /// A database as DB names it.
    enum Database {
        case sqlite(path: String)
        case postgres(url: String)

        /// Reads `sqlite:PATH` or `postgres://…` (`postgresql://…`); `nil` for anything else.
        init?(_ text: String) {
            if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
                self = .postgres(url: text)
            } else if text.hasPrefix("sqlite:"), text.count > "sqlite:".count {
                self = .sqlite(path: String(text.dropFirst("sqlite:".count)))
            } else {
                return nil
            }
        }

        /// An instance for the timers of `namespace` in this database.
        func open(namespace: String, options: DurableTimers.Options) async throws -> DurableTimers {
            switch self {
            case .sqlite(let path):
                return try DurableTimers(path: path, namespace: namespace, options: options)
            case .postgres(let url):
                #if canImport(TimerKitPostgres)
                guard let configuration = PostgresURL.configuration(url) else {
                    DashboardFleet.fail("invalid PostgreSQL URL '\(url)': expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE", status: 64)
                }
                return try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
                #else
                DashboardFleet.fail(
                    "this build has no PostgreSQL store (TIMERKIT_WITHOUT_POSTGRES was set): it cannot open \(url); use sqlite:PATH", status: 64)
                #endif
            }
        }
    }

    /// Prints a line on stdout in one write(2), so that a reader of a pipe sees it at once.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Prints `message` on stderr and exits with `status`.
    static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(status)
    }
}
