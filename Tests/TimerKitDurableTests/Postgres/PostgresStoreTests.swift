#if canImport(TimerKitPostgres)
import Foundation
import PostgresNIO
import Testing
@testable import TimerKit
@testable import TimerKitDurable
@testable import TimerKitPostgres

/// What only the PostgreSQL store does: wake other instances without polling, recover its listening
/// connection, decide on the database's clock, and fail clearly when the server is away.
@Suite("Durable timers on PostgreSQL: notifications, time and faults", .serialized, .timeLimit(.minutes(2)))
struct PostgresStoreTests {
    func options(_ change: (inout DurableTimers.Options) -> Void = { _ in }) -> DurableTimers.Options { serverOptions(change) }

    /// Two runners of one namespace: `writer` only schedules, `firer` runs.
    func pair(_ namespace: String, log: FireLog) async throws -> (writer: DurableTimers, firer: DurableTimers) {
        let configuration = try TestServer.configuration()
        let writer = try await DurableTimers(postgres: configuration, namespace: namespace, options: options())
        try await writer.register("note", payload: Note.self) { _, _ in }
        let firer = try await DurableTimers(postgres: configuration, namespace: namespace, options: options())
        try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        return (writer, firer)
    }

    @Test(
        "No polling across instances: a timer one instance schedules inside the horizon fires on another at once (NOTIFY), half a minute before that one's next load"
    )
    func notificationWakesAnotherInstance() async throws {
        let log = FireLog()
        let (writer, firer) = try await pair("notify-\(UUID().uuidString.prefix(8))", log: log)
        await firer.start()  // loads its (empty) horizon now, next in 30 s
        let due = Date().addingTimeInterval(0.3)
        try await writer.schedule(key: "k", at: due, handler: "note", payload: Note(text: "from the writer"))
        #expect(await eventually { log.count == 1 })
        let fire = try #require(log.all.first?.fire)
        #expect(fire.firedAt >= fire.scheduledDeadline, "never early")
        #expect(log.all.first?.payload == "from the writer")
        await firer.shutdown()
    }

    @Test(
        "No polling across horizons: a writer whose horizon is 2 s notifies a timer due in 5 s, and an instance with the default horizon fires it before its next load (the writer had judged by its own horizon and sent nothing)"
    )
    func notificationBeyondTheWritersHorizon() async throws {
        let log = FireLog()
        let namespace = "horizons-\(UUID().uuidString.prefix(8))"
        let configuration = try TestServer.configuration()
        let writer = try await DurableTimers(postgres: configuration, namespace: namespace, options: options { $0.horizon = .seconds(2) })
        try await writer.register("note", payload: Note.self) { _, _ in }
        let horizonLoads = Locked(0)
        let firer = try await DurableTimers(
            postgres: configuration, namespace: namespace,
            options: options { options in
                options.onEvent = { event in
                    if case .loaded(scope: .horizon, _, _) = event { horizonLoads.withLock { $0 += 1 } }
                }
            })
        try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await firer.start()  // loads its (empty) horizon now, next in 30 s
        #expect(await eventually { horizonLoads.withLock { $0 } == 1 })
        try await writer.schedule(key: "k", after: .seconds(5), handler: "note", payload: Note(text: "beyond the writer's horizon"))
        #expect(await eventually { log.count == 1 })
        #expect(horizonLoads.withLock { $0 } == 1, "armed by the notification: it fired before the firer's next load")
        await firer.shutdown()
        await writer.shutdown()
    }

    @Test(
        "C17: a key, namespace and handler name at the 512-byte limit, of the characters JSON escapes (quotes, backslashes) and of 3-byte ones, travel in one notification: the timer is scheduled and fires on another instance at once"
    )
    func notificationAtTheLimits() async throws {
        let log = FireLog()
        let namespace = String(repeating: "\\", count: 504) + UUID().uuidString.prefix(8)
        let handler = String(repeating: "\"", count: 512)
        let key = String(repeating: "€", count: 170)  // 510 bytes of UTF-8
        let configuration = try TestServer.configuration()
        let writer = try await DurableTimers(postgres: configuration, namespace: namespace, options: options())
        try await writer.register(handler, payload: Note.self) { _, _ in }
        let firer = try await DurableTimers(postgres: configuration, namespace: namespace, options: options())
        try await firer.register(handler, payload: Note.self) { note, fire in log.append(note.text, fire) }
        await firer.start()  // loads its (empty) horizon now, next in 30 s: only a notification arms the timer
        try await writer.schedule(key: key, after: .milliseconds(300), handler: handler, payload: Note(text: "at the limits"))
        #expect(await eventually { log.count == 1 })
        #expect(log.all.first?.payload == "at the limits")
        #expect((log.all.first?.fire.lateness ?? .seconds(60)) < .seconds(15), "armed by the notification, not by the next load 30 s on")
        #expect(try await eventually { try await writer.timer(key: key) == nil }, "the one-shot is removed once its run is written")
        await firer.shutdown()
    }

    @Test(
        "Rows decoded one by one: rows another release or a manual edit wrote — an unknown misfire policy, an unreadable rule, a due time in 1700 — are parked with their reasons and reported, and the rest of the namespace keeps firing"
    )
    func unreadableRowsAreParked() async throws {
        let log = FireLog()
        let namespace = "rows-\(UUID().uuidString.prefix(8))"
        let parkedEvents = Locked<[String]>([])
        let writer = try await DurableTimers(postgres: try TestServer.configuration(), namespace: namespace, options: options())
        try await writer.register("note", payload: Note.self) { _, _ in }
        let firer = try await DurableTimers(
            postgres: try TestServer.configuration(), namespace: namespace,
            options: options { options in
                options.onEvent = { event in
                    if case .parked(let key, _, _) = event { parkedEvents.withLock { $0.append(key) } }
                }
            })
        try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        try await writer.schedule(key: "good", after: .milliseconds(200), handler: "note", payload: Note(text: "good"))
        let insert = """
            INSERT INTO timerkit_timers (namespace, key, handler, payload, rule, misfire, due_ns, ready_at_ns, sequence)
            VALUES ('\(namespace)', $1, 'note', convert_to('{"text":"bad"}', 'UTF8'), $2, $3, $4, $4, nextval('timerkit_sequence'))
            """
        let now = Date().nanosecondsSince1970
        let rows: [(String, String?, String, Int64)] = [
            ("misfire", nil, "sometimes:3", now), ("rule", "{\"weekdays\": \"often\"}", "once", now), ("1700", nil, "once", -8_520_336_000 * 1_000_000_000)
        ]
        let admin = PostgresClient(configuration: try TestServer.configuration())
        let running = Task { await admin.run() }
        defer { running.cancel() }
        for (key, rule, misfire, due) in rows {
            try await admin.query(PostgresQuery(unsafeSQL: insert, binds: try binds(key, rule, misfire, due)))
        }
        await firer.start()
        #expect(await eventually { log.count == 1 })
        #expect(log.all.first?.payload == "good")
        #expect(
            await eventually {
                let stored = (try? await firer.timers()) ?? []
                return stored.count == 3 && stored.allSatisfy { $0.state == .failed }
            })
        let reasons = Dictionary(uniqueKeysWithValues: try await firer.timers().map { ($0.key, $0.lastError ?? "") })
        #expect(reasons["misfire"]?.contains("the misfire policy 'sometimes:3' is unknown") == true, "\(reasons)")
        #expect(reasons["rule"]?.contains("calendar rule is in a form this version cannot read") == true)
        #expect(reasons["1700"]?.contains("outside the dates durable timers keep") == true)
        #expect(Set(parkedEvents.withLock { $0 }) == ["misfire", "rule", "1700"], "each park reported as an event")
        await firer.shutdown()
    }

    /// The binds of the bad-row insert.
    func binds(_ key: String, _ rule: String?, _ misfire: String, _ due: Int64) throws -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(key)
        binds.append(rule)
        binds.append(misfire)
        binds.append(due)
        return binds
    }

    @Test(
        "Reloads coalesce: thirty notifications to reload the horizon, arriving at once, make a few loads (one under way, one more after it), not thirty"
    )
    func reloadsCoalesce() async throws {
        let log = FireLog()
        let namespace = "reload-\(UUID().uuidString.prefix(8))"
        let (writer, firer) = try await pair(namespace, log: log)
        await firer.start()
        let before = firer.runner.horizonLoads.count
        let admin = PostgresClient(configuration: try TestServer.configuration())
        let running = Task { await admin.run() }
        defer { running.cancel() }
        // One transaction: delivered together at its commit (distinct payloads, which PostgreSQL
        // would otherwise fold into one).
        let logger = Logger(label: "test")
        try await admin.withTransaction(logger: logger) { connection in
            for index in 0..<30 {
                try await connection.query(
                    "SELECT pg_notify(\(PostgresTimerStore.channel(for: namespace)), json_build_object('n', \(namespace)::text, 'reload', true, 'i', \(index))::text)",
                    logger: logger)
            }
        }
        try await writer.schedule(key: "after", after: .milliseconds(200), handler: "note", payload: Note(text: "after the burst"))
        #expect(await eventually { log.count == 1 })
        #expect(await eventually { !firer.runner.horizonLoads.loading })
        let loads = firer.runner.horizonLoads.count - before
        print("reloads: 30 notifications, \(loads) loads of the horizon")
        #expect(loads >= 1 && loads <= 10, "\(loads) loads for 30 notifications")
        await firer.shutdown()
    }

    @Test(
        "A batch of 200 timers written on another instance is told as the window of ready times it touched: this instance loads that window — 200 timers — not its horizon of 3,000 more, and fires them all"
    )
    func batchLoadsItsWindow() async throws {
        let log = FireLog()
        let namespace = "window-\(UUID().uuidString.prefix(8))"
        let loads = Locked<[(scope: DurableTimerEvent.LoadScope, timers: Int)]>([])
        let configuration = try TestServer.configuration()
        let writer = try await DurableTimers(postgres: configuration, namespace: namespace, options: options())
        try await writer.register("note", payload: Note.self) { _, _ in }
        let firer = try await DurableTimers(
            postgres: configuration, namespace: namespace,
            options: options { options in
                options.onEvent = { event in
                    if case .loaded(let scope, let timers, _) = event { loads.withLock { $0.append((scope, timers)) } }
                }
            })
        try await firer.register("note", payload: Note.self) { note, fire in log.append(note.text, fire) }
        let later = Date().addingTimeInterval(50)
        _ = try await writer.schedule((0..<3_000).map { (key: "later-\($0)", at: later, payload: Note(text: "later")) }, handler: "note")
        await firer.start()  // loads its horizon (the 3,000) now, next in 30 s
        #expect(loads.withLock { $0.map(\.timers) } == [3_000])
        let soon = Date().addingTimeInterval(1.5)
        _ = try await writer.schedule(
            (0..<200).map { (key: "soon-\($0)", at: soon.addingTimeInterval(Double($0) / 1_000), payload: Note(text: "soon")) }, handler: "note")
        #expect(await eventually { log.count == 200 })
        let after = loads.withLock { Array($0.dropFirst()) }
        // Before: one notification to reload, and the whole horizon (3,200 timers) read again.
        #expect(after.allSatisfy { $0.scope == .window }, "\(after)")
        #expect(after.map(\.timers).reduce(0, +) == 200, "\(after)")
        #expect((log.all.map(\.fire.lateness).max() ?? .seconds(60)) < .seconds(20), "armed by the window, not by the next load")
        await firer.shutdown()
        await writer.shutdown()
    }

    @Test("Notifications are scoped per namespace: a listener on one namespace's channel hears its writes and none of another namespace's")
    func notificationsPerNamespace() async throws {
        let (mine, other) = ("scoped-\(UUID().uuidString.prefix(8))", "other-\(UUID().uuidString.prefix(8))")
        #expect(PostgresTimerStore.channel(for: mine) != PostgresTimerStore.channel(for: other))
        #expect(PostgresTimerStore.channel(for: "shop") == "timerkit_46dc5e18e28e2409", "the same channel in every release of a fleet")
        let admin = PostgresClient(configuration: try TestServer.configuration())
        let running = Task { await admin.run() }
        defer { running.cancel() }
        let heard = Locked<[String]>([])
        let listening = Task {
            try await admin.withConnection { connection in
                try await connection.listen(on: PostgresTimerStore.channel(for: mine)) { notifications in
                    for try await notification in notifications { heard.withLock { $0.append(notification.payload) } }
                }
            }
        }
        defer { listening.cancel() }
        let configuration = try TestServer.configuration()
        let others = try await DurableTimers(postgres: configuration, namespace: other, options: options())
        try await others.register("note", payload: Note.self) { _, _ in }
        let writer = try await DurableTimers(postgres: configuration, namespace: mine, options: options())
        try await writer.register("note", payload: Note.self) { _, _ in }
        try await Task.sleep(for: .milliseconds(300))  // the LISTEN is in place
        for index in 0..<20 { try await others.schedule(key: "o\(index)", after: .seconds(5), handler: "note", payload: Note(text: "other")) }
        try await writer.schedule(key: "mine", after: .seconds(5), handler: "note", payload: Note(text: "mine"))
        #expect(await eventually { heard.withLock { $0 }.contains { $0.contains("\"mine\"") } })
        #expect(!heard.withLock { $0 }.contains { $0.contains(other) }, "\(heard.withLock { $0 })")
        try await others.cancel(key: "o0")
        try await writer.cancel(key: "mine")
    }

    @Test("A dropped listening connection: the instance reconnects and loads its horizon again, so a timer written while it was away fires")
    func droppedListenerReloads() async throws {
        let log = FireLog()
        let namespace = "drop-\(UUID().uuidString.prefix(8))"
        let (writer, firer) = try await pair(namespace, log: log)
        await firer.start()
        let admin = PostgresClient(configuration: try TestServer.configuration())
        let running = Task { await admin.run() }
        defer { running.cancel() }
        // Wait for the listener, then cut every LISTEN connection and write while they are down.
        #expect(try await poll(within: .seconds(10)) { try await listeners(admin) > 0 })
        try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()")
        try await writer.schedule(key: "k", at: Date().addingTimeInterval(0.5), handler: "note", payload: Note(text: "written meanwhile"))
        #expect(await eventually { log.count == 1 })
        #expect(log.all.first?.payload == "written meanwhile")
        await firer.shutdown()
    }

    @Test(
        "Database time: a store on the database's clock ignores the host's reading — a claim \"an hour from now\" by a host clock does not take a timer due in an hour"
    )
    func databaseTimeDecides() async throws {
        let store = try await PostgresTimerStore(
            configuration: try TestServer.configuration(), timeSource: .database, notifyWithin: .seconds(60), timeout: .seconds(60), maximumSkew: .seconds(1),
            onError: { _ in })
        let namespace = "time-\(UUID().uuidString.prefix(8))"
        let hostNow = TimerClock.wall.now.nanoseconds
        let hour: Int64 = 3_600_000_000_000
        var record = DurableTimerRecord(
            namespace: namespace, key: "k", handler: "note", payload: Data("{}".utf8), recurrence: .none, misfire: .once, due: hostNow + hour)
        record.readyAt = record.due
        _ = try await store.put(record, conflict: .fail)
        let claim = try await store.claim(
            namespace: namespace, key: "k", owner: "skewed", now: hostNow + hour + 1, leaseUntil: hostNow + hour + 30_000_000_000, early: false)
        guard case .notReady = claim else {
            Issue.record("a host an hour ahead claimed a timer the database holds due in an hour: \(claim)")
            return
        }
        #expect(abs(store.clockOffset) < 1_000_000_000, "the measured offset to a server on loopback is below a second")
        await store.close()
    }

    @Test(
        "C14: a renewal is answered while tasks spin on every thread of Swift's cooperative pool: the calls that keep claims alive (so no second run starts elsewhere) run on an executor of the store's own"
    )
    func renewalBesideASaturatedPool() async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await StoreKind.postgres.makeStore(file: file)
        let second: Int64 = 1_000_000_000
        let record = DurableTimerRecord(
            namespace: namespace, key: "held", handler: "note", payload: Data(#"{"text":"held"}"#.utf8), recurrence: .none, misfire: .once, due: epoch)
        _ = try await store.put(record, conflict: .fail)
        let claim = try #require(
            try await store.claim(namespace: namespace, key: "held", owner: "a", now: epoch, leaseUntil: epoch + 30 * second, early: false).record)
        // Handlers that never suspend, one per thread of the pool, for up to 20 s; they stop as
        // soon as the renewal has returned.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let started = Locked(0)
        let renewed = Locked(false)
        let giveUp = Date().addingTimeInterval(20)
        let spinners = (0..<cores).map { _ in
            Task.detached { () -> Bool in
                started.withLock { $0 += 1 }
                while !renewed.withLock({ $0 }), Date() < giveUp {}
                return renewed.withLock { $0 }
            }
        }
        // The runner renews from an executor of its own (a dispatch queue), as here.
        let renewal = Task(executorPreference: DispatchTaskExecutor(label: "test.renewals")) { () throws -> Set<StoredKey> in
            let waitUntil = Date().addingTimeInterval(5)
            while started.withLock({ $0 }) < cores, Date() < waitUntil { usleep(1_000) }
            let kept = try await store.renewAll(
                namespace: namespace, claims: [DurableHeldClaim(key: "held", owner: "a", sequence: claim.sequence)], now: epoch + second,
                leaseUntil: epoch + 31 * second)
            renewed.withLock { $0 = true }
            return kept
        }
        let kept = try await renewal.value
        var stoppedByTheRenewal: [Bool] = []
        for spinner in spinners { stoppedByTheRenewal.append(await spinner.value) }
        #expect(kept == [StoredKey("held")])
        #expect(
            stoppedByTheRenewal.allSatisfy { $0 },
            "the renewal returned only after the spinning tasks gave up (20 s): it waited for a thread of the cooperative pool")
        #expect(try await store.record(namespace: namespace, key: "held")?.leaseUntil == epoch + 31 * second)
        await store.close()
    }

    @Test("A host clock off by more than the limit is reported as clockSkew, with the offset")
    func skewReported() async throws {
        let reported = Locked<[DurableTimerError]>([])
        var options = options()
        options.onError = { error in reported.withLock { $0.append(error) } }
        let timers = try await DurableTimers(
            postgres: try TestServer.configuration(), namespace: "skew", options: options, maximumClockSkew: .seconds(1), hostClockSkew: .seconds(-5))
        let skews = reported.withLock { $0 }.compactMap { error -> Int64? in if case .clockSkew(let milliseconds) = error { milliseconds } else { nil } }
        #expect(skews.count == 1 && (4_900...5_100).contains(skews[0]), "the host reads 5 s behind: the database is 5 s ahead")
        #expect(try await timers.count() >= 0)
    }

    @Test(
        "A server that cannot be reached: the deploy step's migrate throws unreachable, naming the cause; a runner's initializer returns and reports it, and its calls throw it within the busy timeout"
    )
    func unreachable() async throws {
        var configuration = try TestServer.configuration()
        configuration = PostgresClient.Configuration(host: "127.0.0.1", port: 1, username: configuration.username, password: nil, database: nil, tls: .disable)
        let start = ContinuousClock.now
        await #expect {
            try await DurableTimers.migrate(postgres: configuration, timeout: .seconds(2))
        } throws: { error in
            guard case DurableTimerError.unreachable = error else { return false }
            return "\(error)".contains("cannot be reached")
        }
        let reported = Locked<[DurableTimerError]>([])
        let timers = try await DurableTimers(
            postgres: configuration,
            options: options { options in
                options.busyTimeout = .seconds(2)
                options.onError = { error in reported.withLock { $0.append(error) } }
            })
        #expect(reported.withLock { $0 }.first.map { "\($0)".contains("cannot be reached") } == true, "\(reported.withLock { $0 })")
        await #expect(throws: DurableTimerError.self) { try await timers.count() }
        await timers.shutdown()
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    func listeners(_ client: PostgresClient) async throws -> Int64 {
        var count: Int64 = 0
        for try await value in try await client.query("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'").decode(Int64.self) { count = value }
        return count
    }

    func poll(within timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws -> Bool {
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try await condition()
    }
}
#endif
