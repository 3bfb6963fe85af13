import Foundation
import GRDB
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// C17 for durable timers: each bad input and each fault of the file is a clear, documented error;
/// nothing stored is lost, nothing crashes, nothing spins.
@Suite("Durable timers: bad input and faults")
struct DurableBadInputTests {
    @Test("A database path that cannot be opened (no such folder) is refused with cannotOpen, naming the path")
    func cannotOpen() async throws {
        let path = "/nonexistent-\(UUID().uuidString)/timers.sqlite"
        #expect {
            try DurableTimers(path: path)
        } throws: { error in
            guard case DurableTimerError.cannotOpen(let named, _) = error else { return false }
            return named == path && "\(error)".contains("cannot open the durable-timer database at \(path)")
        }
    }

    @Test("A file that is not a database is refused with corrupt, and left as it was")
    func corrupt() async throws {
        let database = try TemporaryDatabase()
        let garbage = Data(repeating: 0x5A, count: 8_192)
        try garbage.write(to: URL(fileURLWithPath: database.path))
        #expect {
            try DurableTimers(path: database.path)
        } throws: { error in
            guard case DurableTimerError.corrupt = error else { return false }
            return "\(error)".contains("restore it from a backup")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: database.path)) == garbage)
    }

    @Test("A database another connection keeps locked past the busy timeout: schedule throws locked, writes nothing, and succeeds once the lock is gone")
    func locked() async throws {
        let database = try TemporaryDatabase()
        var options = exactOptions()
        options.busyTimeout = .milliseconds(100)
        let timers = try DurableTimers(path: database.path, clock: makeVirtualClock().clock, options: options)
        try await timers.register("note", payload: Note.self) { _, _ in }
        let other = try DatabaseQueue(path: database.path)
        // The other connection holds its lock on a thread of its own until the test lets it go.
        let (locked, release, released) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        DispatchQueue.global().async {
            try? other.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN EXCLUSIVE")
                locked.signal()
                release.wait()
                try db.execute(sql: "ROLLBACK")
            }
            released.signal()
        }
        locked.wait()
        await #expect {
            try await timers.schedule(key: "k", after: .seconds(1), handler: "note", payload: Note(text: "x"))
        } throws: { error in
            guard case DurableTimerError.locked = error else { return false }
            return "\(error)".contains("nothing was written, try again")
        }
        release.signal()
        released.wait()
        #expect(try await timers.count() == 0)
        #expect(try await timers.schedule(key: "k", after: .seconds(1), handler: "note", payload: Note(text: "x")))
        #expect(try await timers.count() == 1)
    }

    @Test("A full database (its size limit reached): schedule throws full and what was stored stays")
    func full() async throws {
        let database = try TemporaryDatabase()
        let clock = makeVirtualClock().clock
        // Created at its natural size, then reopened with a page limit it soon reaches.
        _ = try DurableTimers(path: database.path, clock: clock, options: exactOptions())
        let store = try SQLiteTimerStore(path: database.path, busyTimeout: .seconds(1), durability: .full, pragmas: ["PRAGMA max_page_count = 16"])
        let timers = try DurableTimers(store: store, namespace: "default", clock: clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        let big = Note(text: String(repeating: "x", count: 2_000))
        var stored = 0
        var failure: DurableTimerError?
        for index in 0..<100 {
            do {
                try await timers.schedule(key: "k\(index)", after: .seconds(1), handler: "note", payload: big)
                stored += 1
            } catch {
                failure = error
                break
            }
        }
        guard case .full = failure else {
            Issue.record("expected full, got \(String(describing: failure))")
            return
        }
        #expect("\(failure!)".contains("full"))
        let count = try await timers.count()
        #expect(stored > 0 && count == stored)
    }

    @Test("Bad schedules are refused with an error that names the problem, and store nothing")
    func badSchedules() async throws {
        let database = try TemporaryDatabase()
        let timers = try DurableTimers(path: database.path, clock: makeVirtualClock().clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        let note = Note(text: "x")
        await #expect(throws: DurableTimerError.unknownHandler("nope")) { try await timers.schedule(key: "k", at: at(1), handler: "nope", payload: note) }
        await #expect(throws: DurableTimerError.invalidKey("")) { try await timers.schedule(key: "", at: at(1), handler: "note", payload: note) }
        let long = String(repeating: "k", count: 513)
        await #expect(throws: DurableTimerError.invalidKey(long)) { try await timers.schedule(key: long, at: at(1), handler: "note", payload: note) }
        await #expect(throws: DurableTimerError.self) { try await timers.schedule(key: "k", every: .zero, handler: "note", payload: note) }
        await #expect(throws: DurableTimerError.self) { try await timers.schedule(key: "k", every: .seconds(-1), handler: "note", payload: note) }
        await #expect(throws: DurableTimerError.self) { try await timers.schedule(key: "k", after: .seconds(-1), handler: "note", payload: note) }
        await #expect(throws: DurableTimerError.self) { try await timers.schedule(key: "k", after: .seconds(Int64.max), handler: "note", payload: note) }
        await #expect(throws: DurableTimerError.self) { try await timers.schedule(key: "k", at: at(1), handler: "note", payload: note, misfire: .all(max: 0)) }
        await #expect(throws: DurableTimerError.self) {
            try await timers.schedule(key: "k", at: at(1), handler: "note", payload: note, misfire: .within(.seconds(-1)))
        }
        await #expect(throws: DurableTimerError.handlerAlreadyRegistered("note")) { try await timers.register("note", payload: Note.self) { _, _ in } }
        await #expect {
            try await timers.schedule(key: "k", at: at(1), handler: "note", payload: Double.nan)
        } throws: { error in
            guard case DurableTimerError.payload(let key, _) = error else { return false }
            return key == "k"
        }
        #expect(try await timers.count() == 0)
        await #expect(throws: DurableTimerError.notFound("missing")) { try await timers.reschedule(key: "missing", at: at(5)) }
        #expect(throws: DurableTimerError.notACalendarClock("continuous")) { try DurableTimers(path: database.path, clock: .continuous) }
        #expect(throws: DurableTimerError.invalidKey("")) { try DurableTimers(path: database.path, namespace: "") }
    }

    @Test(
        "C17: options out of range — a lease, horizon or busy timeout of more than a day, a busy timeout of zero, a negative grace — are refused before the database file is made; a handler's lease of more than a day too"
    )
    func optionsRefusedBeforeOpening() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-options-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("timers.sqlite").path
        let changes: [(String, (inout DurableTimers.Options) -> Void)] = [
            ("lease", { $0.lease = .seconds(86_401) }), ("lease", { $0.lease = .seconds(Int64.max) }), ("horizon", { $0.horizon = .seconds(86_401) }),
            ("busyTimeout", { $0.busyTimeout = .zero }), ("busyTimeout", { $0.busyTimeout = .seconds(86_401) }), ("grace", { $0.grace = .seconds(-1) })
        ]
        for (name, change) in changes {
            var options = DurableTimers.Options()
            change(&options)
            #expect {
                try DurableTimers(path: path, clock: makeVirtualClock().clock, options: options)
            } throws: { error in
                guard case DurableTimerError.invalidDuration(let reason) = error else { return false }
                return reason.contains(name)
            }
            #expect(!FileManager.default.fileExists(atPath: path), "\(name): the file was made before the options were checked")
        }
        var longest = DurableTimers.Options()
        (longest.lease, longest.horizon, longest.busyTimeout) = (.seconds(86_400), .seconds(86_400), .seconds(86_400))
        let timers = try DurableTimers(path: path, clock: makeVirtualClock().clock, options: longest)
        await #expect(throws: DurableTimerError.self) { try await timers.register("long", payload: Note.self, lease: .seconds(86_401)) { _, _ in } }
        try await timers.register("day", payload: Note.self, lease: .seconds(86_400)) { _, _ in }
    }

    @Test(
        "C17: dates outside 1970 ..< 2200, NaN and infinite ones, NUL and other control characters in keys, namespaces and handler names, and payloads over 1 MiB are refused with their errors; nothing is stored"
    )
    func outOfRangeInputs() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        let note = Note(text: "x")
        func isInvalidDate(_ error: any Error) -> Bool { if case DurableTimerError.invalidDate = error { true } else { false } }
        func isInvalidDuration(_ error: any Error) -> Bool { if case DurableTimerError.invalidDuration = error { true } else { false } }
        let year1600 = Date(timeIntervalSince1970: -11_676_096_000)
        let year1700 = Date(timeIntervalSince1970: -8_520_336_000)
        for date in [
            Date.distantPast, year1600, year1700, Date(timeIntervalSince1970: -0.5), Date.distantFuture, DurableTimers.latestDate,
            Date(timeIntervalSince1970: .nan), Date(timeIntervalSince1970: .infinity)
        ] {
            await #expect(performing: { try await timers.schedule(key: "k", at: date, handler: "note", payload: note) }, throws: isInvalidDate)
            await #expect(
                performing: { try await timers.schedule(key: "k", every: .seconds(1), first: date, handler: "note", payload: note) }, throws: isInvalidDate)
            await #expect(performing: { try await timers.schedule([(key: "k", at: date, payload: note)], handler: "note") }, throws: isInvalidDate)
        }
        #expect(try await timers.schedule(key: "edge", at: DurableTimers.earliestDate, handler: "note", payload: note), "the range's first date is in it")
        #expect(try await timers.timer(key: "edge")?.nextDeadline == DurableTimers.earliestDate, "and round-trips exactly")
        await #expect(performing: { try await timers.reschedule(key: "edge", at: .distantFuture) }, throws: isInvalidDate)
        await #expect(performing: { try await timers.postpone(key: "edge", by: .seconds(-1)) }, throws: isInvalidDuration)
        await #expect(performing: { try await timers.postpone(key: "edge", by: .seconds(8_000_000_000)) }, throws: isInvalidDuration)
        await #expect(
            performing: { try await timers.schedule(key: "k", after: .seconds(8_000_000_000), handler: "note", payload: note) }, throws: isInvalidDuration)
        await #expect(
            performing: { try await timers.schedule(key: "k", every: .seconds(8_000_000_000), handler: "note", payload: note) }, throws: isInvalidDuration)
        #expect(try await timers.count() == 1)

        for key in ["a\u{0}b", "tab\there", "line\nbreak", "\u{7F}", String(repeating: "é", count: 257)] {
            await #expect(throws: DurableTimerError.invalidKey(key)) { try await timers.schedule(key: key, at: at(1), handler: "note", payload: note) }
            await #expect(throws: DurableTimerError.invalidKey(key)) { try await timers.register(key, payload: Note.self) { _, _ in } }
            #expect(throws: DurableTimerError.invalidKey(key)) { try DurableTimers(path: database.path, namespace: key, clock: virtual.clock) }
            #expect(try await timers.cancel(key: key) == .notFound)
            #expect(try await timers.timer(key: key) == nil)
        }
        #expect(try await timers.schedule(key: String(repeating: "é", count: 256), at: at(1), handler: "note", payload: note), "512 bytes fit")
        #expect(try await timers.schedule(key: "naïve ☃ 🎉 \"quoted\" back\\slash", at: at(1), handler: "note", payload: note), "any other character fits")
        #expect(try await timers.timer(key: "naïve ☃ 🎉 \"quoted\" back\\slash") != nil)

        let big = Note(text: String(repeating: "x", count: DurableTimers.maximumPayloadSize))
        await #expect {
            try await timers.schedule(key: "big", at: at(1), handler: "note", payload: big)
        } throws: { error in
            guard case DurableTimerError.payload(let key, let reason) = error else { return false }
            return key == "big" && reason.contains("over the limit of 1048576")
        }
        #expect(try await timers.count() == 3)
    }

    @Test("C17: a fire whose deadline is centuries before its run reports a saturated lateness, never a trap")
    func latenessSaturates() {
        let fire = DurableFire(
            namespace: "n", key: "k", scheduledDeadline: .distantPast, firedAt: .distantFuture, deadlineCount: 1, skippedDeadlineCount: 0, attempt: 1,
            sequence: 1)
        #expect(fire.lateness == .nanoseconds(Int64.max))
        let early = DurableFire(
            namespace: "n", key: "k", scheduledDeadline: .distantFuture, firedAt: .distantPast, deadlineCount: 0, skippedDeadlineCount: 0, attempt: 1,
            sequence: 1)
        #expect(early.lateness == .zero)
    }

    @Test(
        "A handler's error is stored as text the store can keep: NUL becomes U+FFFD and a long one is cut to 4,096 bytes, on every store; the timer is parked with it",
        arguments: StoreKind.allCases)
    func errorTextIsKept(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions { $0.maxAttempts = 1 })
        struct Weird: Error, CustomStringConvertible { var description: String { "nul\u{0}here " + String(repeating: "ü", count: 5_000) } }
        try await timers.register("fail", payload: Note.self) { _, _ in throw Weird() }
        await timers.start()
        try await timers.schedule(key: "k", at: at(1), handler: "fail", payload: Note(text: "x"))
        await virtual.advance(by: .seconds(1))
        #expect(await eventually { (try? await timers.timer(key: "k"))?.state == .failed })
        let error = try #require(try await timers.timer(key: "k")?.lastError)
        #expect(error.hasPrefix("nul\u{FFFD}here ") && error.utf8.count <= DurableTimers.maximumErrorLength && error.hasSuffix("…"))
        await timers.shutdown()
        await store.close()
    }
}
