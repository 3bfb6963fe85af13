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
        let store = try SQLiteTimerStore(path: database.path, busyTimeout: .seconds(1), durability: .full, pragmas: ["PRAGMA max_page_count = 8"])
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
}
