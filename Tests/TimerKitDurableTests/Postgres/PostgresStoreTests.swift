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
        #expect(try await writer.cancel(key: key) == .notFound)
        await firer.shutdown()
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

    @Test("A server that cannot be reached: opening throws unreachable, naming the cause, within the busy timeout")
    func unreachable() async throws {
        var configuration = try TestServer.configuration()
        configuration = PostgresClient.Configuration(host: "127.0.0.1", port: 1, username: configuration.username, password: nil, database: nil, tls: .disable)
        let start = ContinuousClock.now
        await #expect {
            _ = try await DurableTimers(postgres: configuration, options: options { $0.busyTimeout = .seconds(2) })
        } throws: { error in
            guard case DurableTimerError.unreachable = error else { return false }
            return "\(error)".contains("cannot be reached")
        }
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
