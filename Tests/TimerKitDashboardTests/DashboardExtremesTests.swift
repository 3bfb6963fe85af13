import Foundation
import GRDB
import Testing
import TimerKitDashboard
import TimerKitDurable

#if canImport(TimerKitPostgres)
import PostgresNIO
import TimerKitPostgres
#endif

/// Rows that no release writes today but a database may hold — dates at both ends of 64 bits
/// (0.1.0 stored `.distantPast` as −2^63 ns), counts at their maxima, policies and rules that do
/// not read, bidirectional and control text — written straight into the store's tables.
struct ExtremeRows {
    static let bidi = "\u{202E}gnp.exe\u{202C} \u{0}\u{1B}[31m\u{7}"

    struct Timer {
        var key: String
        var interval: Int64? = nil
        var rule: String? = nil
        var misfire = "once"
        var due: Int64
        var ready: Int64
        var fireCount: Int64 = 0
        var attempts: Int32 = 0
        var skipped: Int64 = 0
        var lastError: String? = nil
        var parked = false
        var owner: String? = nil
        var lease: Int64? = nil
        var paused: Int16 = 0
    }

    struct Run {
        var key: String
        var started: Int64
        var attempt: Int32
        var due: Int64
        var ended: Int64
        var outcome: String
        var instance: String
        var error: String?
    }

    static let timers: [Timer] = [
        Timer(
            key: "extreme/distant-past", due: .min, ready: .min, fireCount: .max, attempts: .max, skipped: .max, lastError: bidi, parked: true),
        Timer(key: "extreme/distant-future", interval: .max, misfire: "skip", due: .max, ready: .max, owner: "ghost", lease: .max),
        Timer(key: "extreme/held-long-ago", due: .min, ready: .min, owner: "ghost", lease: .min),
        Timer(key: "extreme/nanosecond-grid", interval: 1, misfire: "all:9223372036854775807", due: .min, ready: .min, parked: true),
        Timer(key: "extreme/unreadable", rule: "not a rule", misfire: "within:-9223372036854775808", due: 0, ready: 0, parked: true),
        Timer(key: "extreme/paused", interval: 1, due: .max, ready: .max, parked: true, paused: 1),
        Timer(key: "extreme/\u{202E}gnp.exe\u{202C}", due: .min + 1, ready: .max - 1, lastError: bidi, parked: true)
    ]

    static let runs: [Run] = [
        Run(key: "extreme/distant-past", started: .max, attempt: .max, due: .min, ended: .min, outcome: "failed", instance: bidi, error: bidi),
        Run(key: "extreme/distant-past", started: .min, attempt: 1, due: .max, ended: .max, outcome: "succeeded", instance: "ghost", error: nil),
        Run(key: "extreme/nanosecond-grid", started: .max - 1, attempt: 0, due: .max, ended: 0, outcome: "no such outcome", instance: "", error: "")
    ]

    /// Writes the rows into `namespace` of the SQLite file at `path`.
    static func write(sqlite path: String, namespace: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for (index, timer) in timers.enumerated() {
                try db.execute(
                    sql: """
                        INSERT INTO timerkit_timers (namespace, key, handler, payload, interval_ns, rule, misfire, due_ns, ready_at_ns, sequence,
                            fire_count, attempts, skipped, last_error, parked, owner, lease_until_ns, paused)
                        VALUES (?, ?, 'email.send', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        namespace, timer.key, Data(#"{"text":"x"}"#.utf8), timer.interval, timer.rule, timer.misfire, timer.due, timer.ready,
                        Int64.max - Int64(index), timer.fireCount, timer.attempts, timer.skipped, timer.lastError, timer.parked, timer.owner,
                        timer.lease, timer.paused
                    ])
            }
            for run in runs {
                try db.execute(
                    sql: """
                        INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                        VALUES (?, ?, ?, ?, ?, 'email.send', ?, ?, ?, ?, ?)
                        """,
                    arguments: [namespace, run.key, run.started, Int64.min, run.attempt, run.due, run.ended, run.outcome, run.instance, run.error])
            }
        }
    }

    #if canImport(TimerKitPostgres)
    /// Writes the rows into `namespace` on the test server.
    static func write(postgres url: String, namespace: String) async throws {
        let configuration = try #require(PostgresURL.configuration(url))
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        for (index, timer) in timers.enumerated() {
            let sequence = Int64.max - Int64(index)
            _ = try await client.query(
                """
                INSERT INTO timerkit_timers (namespace, key, handler, payload, interval_ns, rule, misfire, due_ns, ready_at_ns, sequence,
                    fire_count, attempts, skipped, last_error, parked, owner, lease_until_ns, paused)
                VALUES (\(namespace), \(timer.key), 'email.send', convert_to('{"text":"x"}', 'UTF8'), \(timer.interval), \(timer.rule),
                    \(timer.misfire), \(timer.due), \(timer.ready), \(sequence), \(timer.fireCount), \(timer.attempts), \(timer.skipped),
                    \(timer.lastError?.replacingOccurrences(of: "\u{0}", with: "")), \(timer.parked), \(timer.owner), \(timer.lease), \(timer.paused))
                """)
        }
        for run in runs {
            // PostgreSQL's text holds no NUL: the rest of the control text stays.
            let error = run.error?.replacingOccurrences(of: "\u{0}", with: "")
            let instance = run.instance.replacingOccurrences(of: "\u{0}", with: "")
            _ = try await client.query(
                """
                INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                VALUES (\(namespace), \(run.key), \(run.started), \(Int64.min), \(run.attempt), 'email.send', \(run.due), \(run.ended),
                    \(run.outcome), \(instance), \(error))
                """)
        }
    }
    #endif
}

@Suite("The dashboard on rows at the extremes of every column")
struct DashboardExtremesTests {
    @Test(
        "C17: every page answers, and the operating calls it makes return, on a namespace holding dates of −2^63 and 2^63−1 ns, counts at their maxima, policies and rules that do not read, and bidirectional and control text",
        arguments: Store.allCases)
    func everyPageAnswersOnExtremeRows(store: Store) async throws {
        let fixture = try await Fixture(store)
        switch store {
        case .sqlite: try ExtremeRows.write(sqlite: fixture.folder.appendingPathComponent("timers.sqlite").path, namespace: fixture.namespace)
        #if canImport(TimerKitPostgres)
        case .postgres:
            let url = try #require(ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], "run the tests under Scripts/with-postgres")
            try await ExtremeRows.write(postgres: url, namespace: fixture.namespace)
        #endif
        }
        // The operating calls behind the pages (a failed query here was PostgreSQL's "bigint out of
        // range" on the lateness of a run due at −2^63).
        let stats = try await fixture.viewer.stats()
        #expect(stats.handlers.contains { $0.name == "email.send" && $0.recentRuns > 0 })
        for timer in ExtremeRows.timers {
            _ = try await fixture.viewer.why(key: timer.key)
            _ = try await fixture.viewer.plan(key: timer.key, count: 5)
            _ = try await fixture.viewer.history(key: timer.key)
        }
        var targets = ["/", "/timers", "/parked", "/orphans"]
        targets += DurableTimerQuery.Status.allCases.map { "/timers?status=\($0.rawValue)" }
        targets += ExtremeRows.timers.map { "/timer?key=\($0.key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
        for target in targets {
            let page = await fixture.get(target)
            #expect(page.status == 200, "\(target): \(page.status) \(page.text.prefix(300))")
        }
        // The lists show the rows (none hidden because a column did not read).
        let parked = Set(DashboardRouteTests.keys(await fixture.get("/timers?status=parked&prefix=extreme/").text))
        #expect(parked.isSuperset(of: ["extreme/distant-past", "extreme/nanosecond-grid", "extreme/unreadable"]), "parked: \(parked)")
        await fixture.close()
    }

    @Test("C17: a refresh interval past 64 bits of milliseconds is taken as a day, and one under a second as a second (the page had trapped)")
    func refreshIntervalsAreBounded() async throws {
        let fixture = try await Fixture(.sqlite)
        for (interval, milliseconds) in [(Duration.seconds(Int64.max), 86_400_000), (.zero, 1_000), (.seconds(-5), 1_000), (.milliseconds(2_500), 2_500)] {
            let dashboard = DurableTimersDashboard(
                timers: fixture.viewer, options: .init(token: Fixture.token, readRequiresLogin: false, refreshInterval: interval))
            let response = await dashboard.respond(to: DashboardRequest(method: "GET", target: "/", headers: Fixture.headers(cookie: nil, host: "localhost")))
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(response.status == 200 && text.contains("data-refresh=\"\(milliseconds)\""), "\(interval)")
        }
        await fixture.close()
    }
}
