import Foundation
import GRDB
import InMemoryTracing
import Testing
import TimerKitDurableTracing
import TimerKitTesting
import Tracing

@testable import TimerKit
@testable import TimerKitDurable

/// Tracing durable timers (`DurableTimerTracing`, swift-distributed-tracing) with its in-memory
/// tracer, on both stores: the schedule's context goes into the row and the run continues it —
/// also on a runner opened after the scheduling one closed, which can only have learnt it from
/// the row.
@Suite("Durable timers traced: a span around each schedule and each run, the schedule's context carried in the row")
struct DurableTracingTests {
    /// A tracer of its own and the options that trace with it (no global bootstrap: suites run
    /// side by side).
    struct Traced {
        let tracer = InMemoryTracer()
        var options: DurableTimers.Options { exactOptions { $0.instrumentation = DurableTimerTracing(tracer: tracer) } }

        func finished(_ name: String) -> [FinishedInMemorySpan] { tracer.finishedSpans.filter { $0.operationName == name } }

        /// A started runner on a fresh store of `kind` (the virtual clock), tracing with this
        /// tracer, its handler `handler` logging each run (and throwing what `fails` says).
        func runner(_ kind: StoreKind, handler: String, fails: @escaping @Sendable (DurableFire) -> (any Error)? = { _ in nil }) async throws -> Runner {
            let file = try TemporaryDatabase()
            let virtual = makeVirtualClock()
            let (store, namespace) = try await kind.makeStore(file: file)
            let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: options)
            let log = FireLog()
            try await timers.register(handler, payload: Note.self) { note, fire in
                log.append(note.text, fire)
                if let error = fails(fire) { throw error }
            }
            await timers.start()
            return Runner(file: file, virtual: virtual, store: store, timers: timers, log: log)
        }

        /// Runs `body` inside a request's span, as a server's handler would be.
        @discardableResult
        func inRequest<T>(_ body: () async throws -> T) async rethrows -> T {
            try await tracer.withSpan("POST /orders", ofKind: .server) { _ in try await body() }
        }
    }

    /// A runner of ``Traced/runner(_:handler:fails:)``.
    struct Runner {
        let file: TemporaryDatabase
        let virtual: VirtualClock
        let store: any DurableTimerStore
        let timers: DurableTimers
        let log: FireLog

        func close() async {
            await timers.shutdown()
            await store.close()
        }
    }

    @Test(
        "A one-shot scheduled inside a request fires in the request's trace: the schedule's span is the request's child, the run's span the schedule's child, though the runner that fires it opened after the scheduling one closed",
        arguments: StoreKind.allCases)
    func oneShotContinuesTheTrace(kind: StoreKind) async throws {
        let traced = Traced()
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let (store, namespace) = try await kind.makeStore(file: file)
        let scheduler = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: traced.options)
        try await scheduler.register("expire", payload: Note.self) { _, _ in }
        try await traced.inRequest {
            try await scheduler.schedule(key: "order/1/expiry", at: at(5), handler: "expire", payload: Note(text: "order 1"))
        }
        await scheduler.shutdown()
        await store.close()

        // Another runner, on a store of its own: what it knows of the trace is in the row.
        let (reopened, _) = try await kind.reopen(file: file, namespace: namespace)
        let runner = try DurableTimers(store: reopened, namespace: namespace, clock: virtual.clock, options: traced.options)
        let log = FireLog()
        try await runner.register("expire", payload: Note.self) { note, fire in
            log.append(note.text, fire)
            // The handler's own spans are children of its run's.
            traced.tracer.withSpan("charge card") { _ in }
        }
        await runner.start()
        #expect(await virtual.reach(5) { log.count == 1 && traced.finished("charge card").count == 1 })
        await runner.shutdown()
        await reopened.close()

        let request = try #require(traced.finished("POST /orders").first)
        let schedule = try #require(traced.finished("schedule expire").first)
        let run = try #require(traced.finished("fire expire").first)
        let charge = try #require(traced.finished("charge card").first)
        #expect(schedule.traceID == request.traceID && schedule.parentSpanID == request.spanID && schedule.kind == .producer)
        #expect(run.traceID == request.traceID && run.parentSpanID == schedule.spanID && run.kind == .consumer && run.links.isEmpty)
        #expect(charge.traceID == request.traceID && charge.parentSpanID == run.spanID)
        #expect(schedule.attributes.get("timerkit.timer.key") == .string("order/1/expiry"))
        #expect(run.attributes.get("timerkit.fire.attempt") == .int64(1))
        #expect(run.attributes.get("messaging.message.id") == .string(log.all[0].fire.idempotencyKey))
        #expect(run.status == nil && run.errors.isEmpty)
    }

    @Test(
        "A repeating timer's runs each start a trace of their own, linked to the schedule's span (a timer scheduled once would otherwise grow one trace for ever)",
        arguments: StoreKind.allCases)
    func repeatingRunsLinkToTheSchedule(kind: StoreKind) async throws {
        let traced = Traced()
        let runner = try await traced.runner(kind, handler: "report")
        let (timers, virtual, log) = (runner.timers, runner.virtual, runner.log)
        try await traced.inRequest {
            try await timers.schedule(key: "report", every: .seconds(10), first: at(10), handler: "report", payload: Note(text: "report"))
        }
        for round in 1...3 {
            #expect(await virtual.reach(Double(10 * round)) { log.count == round && traced.finished("fire report").count == round })
        }
        await runner.close()

        let schedule = try #require(traced.finished("schedule report").first)
        let runs = traced.finished("fire report")
        #expect(runs.count == 3)
        #expect(Set(runs.map(\.traceID)).count == 3 && !runs.contains { $0.traceID == schedule.traceID || $0.parentSpanID != nil })
        for run in runs {
            #expect(run.links.map(\.context.inMemorySpanContext?.spanID) == [schedule.spanID])
            #expect(run.links.map(\.context.inMemorySpanContext?.traceID) == [schedule.traceID])
        }
        #expect(schedule.attributes.get("timerkit.timer.repeats") == .bool(true))
    }

    @Test(
        "A handler that throws ends its run's span as an error with the error recorded, and its retry is another child of the schedule's span (attempt 2); a schedule that fails records its error",
        arguments: StoreKind.allCases)
    func failures(kind: StoreKind) async throws {
        struct Declined: Error {}
        let traced = Traced()
        let runner = try await traced.runner(kind, handler: "charge") { fire in fire.attempt == 1 ? Declined() : nil }
        let (timers, virtual, log) = (runner.timers, runner.virtual, runner.log)
        try await traced.inRequest {
            try await timers.schedule(key: "charge/7", at: at(5), handler: "charge", payload: Note(text: "charge"))
            await #expect(throws: DurableTimerError.keyInUse("charge/7")) {
                try await timers.schedule(key: "charge/7", at: at(6), handler: "charge", payload: Note(text: "again"), ifExists: .fail)
            }
        }
        #expect(await virtual.reach(5) { traced.finished("fire charge").count == 1 })
        #expect(await virtual.reach(6) { log.count == 2 && traced.finished("fire charge").count == 2 }, "the retry, one second later")
        await runner.close()

        let schedules = traced.finished("schedule charge")
        #expect(schedules.count == 2)
        let written = try #require(schedules.first { $0.errors.isEmpty })
        let refused = try #require(schedules.first { !$0.errors.isEmpty })
        #expect(refused.status?.code == .error && refused.errors.first?.error as? DurableTimerError == .keyInUse("charge/7"))
        let runs = traced.finished("fire charge")
        #expect(runs.map { $0.attributes.get("timerkit.fire.attempt") } == [.int64(1), .int64(2)])
        #expect(runs.allSatisfy { $0.parentSpanID == written.spanID && $0.traceID == written.traceID })
        #expect(runs[0].status?.code == .error && runs[0].errors.first?.error is Declined)
        #expect(runs[1].status == nil && runs[1].errors.isEmpty)
    }

    @Test(
        "A replacing schedule stores its own context: the run continues the trace of the request that replaced the timer, not the first one's",
        arguments: StoreKind.allCases)
    func replacingScheduleCarriesItsContext(kind: StoreKind) async throws {
        let traced = Traced()
        let runner = try await traced.runner(kind, handler: "expire")
        let (timers, virtual, log) = (runner.timers, runner.virtual, runner.log)
        _ = try await traced.tracer.withSpan("first request") { _ in
            try await timers.schedule(key: "order/9/expiry", at: at(5), handler: "expire", payload: Note(text: "first"))
        }
        _ = try await traced.tracer.withSpan("second request") { _ in
            try await timers.schedule(key: "order/9/expiry", at: at(6), handler: "expire", payload: Note(text: "second"))
        }
        #expect(await virtual.reach(6) { log.count == 1 && traced.finished("fire expire").count == 1 })
        await runner.close()
        let second = try #require(traced.finished("second request").first)
        let schedules = traced.finished("schedule expire").filter { $0.traceID == second.traceID }
        let run = try #require(traced.finished("fire expire").first)
        #expect(schedules.count == 1 && run.traceID == second.traceID && run.parentSpanID == schedules.first?.spanID)
        #expect(log.all.map(\.payload) == ["second"])
    }

    @Test("A batch schedule is one span, whose context every timer of the batch carries into its run", arguments: StoreKind.allCases)
    func batch(kind: StoreKind) async throws {
        let traced = Traced()
        let runner = try await traced.runner(kind, handler: "remind")
        let (timers, virtual, log) = (runner.timers, runner.virtual, runner.log)
        let batch = (1...5).map { (key: "remind/\($0)", at: at(Double($0)), payload: Note(text: "\($0)")) }
        try await traced.inRequest { try await timers.schedule(batch, handler: "remind") }
        #expect(await virtual.reach(5) { log.count == 5 && traced.finished("fire remind").count == 5 })
        await runner.close()

        let schedule = try #require(traced.finished("schedule remind").first)
        #expect(traced.finished("schedule remind").count == 1 && schedule.attributes.get("timerkit.schedule.count") == .int64(5))
        #expect(traced.finished("fire remind").allSatisfy { $0.parentSpanID == schedule.spanID && $0.traceID == schedule.traceID })
    }

    @Test(
        "A timer written inside the application's SQLite transaction carries the request's trace like any other; without an instrumentation nothing is traced and no context is stored"
    )
    func applicationTransactionAndNone() async throws {
        let traced = Traced()
        let file = try TemporaryDatabase()
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(60)
        let database = try DatabasePool(path: file.path, configuration: configuration)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(database: database, clock: virtual.clock, options: traced.options)
        let log = FireLog()
        try await timers.register("expire", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await timers.start()
        try await traced.inRequest {
            try await database.write { db in
                try timers.schedule(key: "order/2/expiry", at: at(3), handler: "expire", payload: Note(text: "order 2"), in: db)
            }
        }
        #expect(await virtual.reach(3) { log.count == 1 && traced.finished("fire expire").count == 1 })
        await timers.shutdown()
        let request = try #require(traced.finished("POST /orders").first)
        let schedule = try #require(traced.finished("schedule expire").first)
        #expect(schedule.parentSpanID == request.spanID)
        #expect(traced.finished("fire expire").first?.parentSpanID == schedule.spanID)

        // No instrumentation: the column stays NULL, and the timer runs as ever.
        let plain = try DurableTimers(database: database, clock: virtual.clock, options: exactOptions())
        try await plain.register("expire", payload: Note.self) { note, fire in log.append(note.text, fire) }
        try await plain.schedule(key: "order/3/expiry", at: at(100), handler: "expire", payload: Note(text: "order 3"))
        let stored = try await database.read { db in
            try String?.fetchOne(db, sql: "SELECT trace_context FROM timerkit_timers WHERE key = 'order/3/expiry'")
        }
        #expect(stored == .some(nil))
        await plain.shutdown()
    }

    @Test(
        "C17: a stored trace context that does not read — not JSON, not an object of strings, a number, a blob, one cut short — runs its timer in a trace of its own; nothing stored stops a run"
    )
    func unreadableContexts() async throws {
        let traced = Traced()
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(path: file.path, clock: virtual.clock, options: traced.options)
        let log = FireLog()
        try await timers.register("expire", payload: Note.self) { note, fire in log.append(note.text, fire) }
        let damaged = ["'not json'", "'[1, 2]'", "'{\"traceparent\": 7}'", "42", "x'00ff'", "'{\"in-memory-trace-id\": \"1\", '"]
        for (index, _) in damaged.enumerated() {
            try await timers.schedule(key: "t\(index)", at: at(Double(index + 1)), handler: "expire", payload: Note(text: "t\(index)"))
        }
        var waiting = GRDB.Configuration()
        waiting.busyMode = .timeout(60)
        let database = try DatabaseQueue(path: file.path, configuration: waiting)
        try await database.write { db in
            for (index, value) in damaged.enumerated() {
                try db.execute(sql: "UPDATE timerkit_timers SET trace_context = \(value) WHERE key = 't\(index)'")
            }
        }
        await timers.start()
        #expect(await virtual.reach(Double(damaged.count)) { log.count == damaged.count && traced.finished("fire expire").count == damaged.count })
        await timers.shutdown()
        #expect(traced.finished("fire expire").allSatisfy { $0.parentSpanID == nil && $0.links.isEmpty && $0.status == nil })
        #expect(Set(log.all.map(\.payload)) == Set(damaged.indices.map { "t\($0)" }))
    }

    @Test("The stored context is at most 4 KiB: a larger one is not stored, the schedule succeeds and its run starts a trace of its own")
    func oversizedContext() async throws {
        struct Bloated: DurableTimerInstrumentation {
            let inner: DurableTimerTracing
            func startScheduling(_ scheduling: DurableScheduling) -> DurableSchedulingSpan {
                var span = inner.startScheduling(scheduling)
                span.traceContext["tracestate"] = String(repeating: "x", count: DurableTimers.maximumTraceContextSize)
                return span
            }
            func run(_ fire: DurableFire, of timer: DurableScheduling, traceContext: [String: String], _ body: () async throws -> Void) async throws {
                #expect(traceContext.isEmpty)
                try await inner.run(fire, of: timer, traceContext: traceContext, body)
            }
        }
        let traced = Traced()
        let file = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let options = exactOptions { $0.instrumentation = Bloated(inner: DurableTimerTracing(tracer: traced.tracer)) }
        let timers = try DurableTimers(path: file.path, clock: virtual.clock, options: options)
        let log = FireLog()
        try await timers.register("expire", payload: Note.self) { note, fire in log.append(note.text, fire) }
        await timers.start()
        try await traced.inRequest { try await timers.schedule(key: "big", at: at(1), handler: "expire", payload: Note(text: "big")) }
        #expect(await virtual.reach(1) { log.count == 1 && traced.finished("fire expire").count == 1 })
        await timers.shutdown()
        #expect(traced.finished("fire expire").first?.parentSpanID == nil)
    }
}

extension StoreKind {
    /// A second store on what ``makeStore(file:)`` made: the same file, or the same server.
    func reopen(file: TemporaryDatabase, namespace: String) async throws -> (store: any DurableTimerStore, namespace: String) {
        switch self {
        case .sqlite: return (try SQLiteTimerStore(path: file.path, busyTimeout: .seconds(5), durability: .normal), namespace)
        #if canImport(TimerKitPostgres)
        case .postgres: return (try await makeStore(file: file).store, namespace)
        #endif
        }
    }
}
