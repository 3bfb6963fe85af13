import Foundation
import TimerKitDurable

/// A SQLite file with one timer in each status, filled through `DurableTimers` on the wall clock,
/// for `timerkit durable` to read and change:
///
/// | key | handler | status |
/// |---|---|---|
/// | `a/scheduled` | `later` | scheduled: every hour, an hour from now |
/// | `b/due` | `nobody` | due: an hour ago, and no runner knows its handler |
/// | `c/running` | `hold` | running: its handler holds it (lease of an hour) until ``close()`` |
/// | `d/retrying` | `flaky` | retrying: its handler threw; the retry is an hour away |
/// | `e/parked` | `fail` | parked: its handler threw, and one attempt is all it gets |
/// | `p/1` … `p/5` | `later` | scheduled: 2, 3, … 6 hours from now |
///
/// and `f/done`, a one-shot of handler `ok` that ran and is gone: its run is in the history.
final class DurableFixture: Sendable {
    let folder: URL
    /// The runners that hold `c/running` and wrote the failures; ``close()`` stops them.
    private let runners: [DurableTimers]

    var path: String { folder.appendingPathComponent("timers.sqlite").path }

    /// The payload of every timer.
    struct Note: Codable, Sendable { var text: String }

    /// What the failing handlers throw: `lastError` reads it.
    struct Declined: Error, CustomStringConvertible {
        var description: String { "the card was declined by the bank after a very long explanation that goes on and on past the end of any line" }
    }

    /// Every key, in key order.
    static let keys = ["a/scheduled", "b/due", "c/running", "d/retrying", "e/parked", "p/1", "p/2", "p/3", "p/4", "p/5"]

    /// An empty folder, for a database of the test's own.
    init(empty: Void = ()) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        runners = []
    }

    private init(folder: URL, runners: [DurableTimers]) {
        self.folder = folder
        self.runners = runners
    }

    /// The filled database; in `namespace`.
    static func make(namespace: String = "default") async throws -> DurableFixture {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("timers.sqlite").path
        let runners = try await fill(namespace: namespace) { options throws(DurableTimerError) in
            try DurableTimers(path: path, namespace: namespace, options: options)
        }
        return DurableFixture(folder: folder, runners: runners)
    }

    /// Fills a store through instances `open` makes: returns the started runners.
    static func fill(namespace: String, open: (DurableTimers.Options) async throws(DurableTimerError) -> DurableTimers) async throws -> [DurableTimers] {
        let now = Date()
        var quiet = DurableTimers.Options()
        quiet.onError = { error in FileHandle.standardError.write(Data("DurableFixture: \(error)\n".utf8)) }
        // A minute for each store call: under a loaded machine a PostgreSQL answer once took over
        // the default 5 s (a liveness bound, not a speed claim).
        quiet.busyTimeout = .seconds(60)
        // Never started: it only schedules.
        let scheduler = try await open(quiet)
        try await scheduler.register("later", payload: Note.self) { _, _ in }
        try await scheduler.register("nobody", payload: Note.self) { _, _ in }
        try await scheduler.schedule(
            key: "a/scheduled", every: .seconds(3600), first: now.addingTimeInterval(3600), handler: "later", payload: Note(text: "a"))
        try await scheduler.schedule(key: "b/due", at: now.addingTimeInterval(-3_600), handler: "nobody", payload: Note(text: "b"))
        for hour in 1...5 {
            try await scheduler.schedule(key: "p/\(hour)", at: now.addingTimeInterval(3600 * Double(hour + 1)), handler: "later", payload: Note(text: "p"))
        }

        var holding = quiet
        holding.lease = .seconds(3600)
        let holder = try await open(holding)
        try await holder.register("hold", payload: Note.self) { _, _ in try await Task.sleep(for: .seconds(3600)) }

        var retrying = quiet
        retrying.retryDelay = .seconds(3600)
        retrying.maxRetryDelay = .seconds(3600)
        let retrier = try await open(retrying)
        try await retrier.register("flaky", payload: Note.self) { _, _ in throw Declined() }

        var parking = quiet
        parking.maxAttempts = 1
        let parker = try await open(parking)
        try await parker.register("fail", payload: Note.self) { _, _ in throw Declined() }
        try await parker.register("ok", payload: Note.self) { _, _ in }

        for runner in [holder, retrier, parker] { await runner.start() }
        try await holder.schedule(key: "c/running", at: now.addingTimeInterval(-1), handler: "hold", payload: Note(text: "c"))
        try await retrier.schedule(key: "d/retrying", at: now.addingTimeInterval(-1), handler: "flaky", payload: Note(text: "d"))
        try await parker.schedule(key: "e/parked", at: now.addingTimeInterval(-1), handler: "fail", payload: Note(text: "e"))
        try await parker.schedule(key: "f/done", at: now.addingTimeInterval(-1), handler: "ok", payload: Note(text: "f"))
        let end = Date().addingTimeInterval(30)
        var seen = ""
        while Date() < end {
            let running = try await scheduler.timer(key: "c/running")
            let retried = try await scheduler.timer(key: "d/retrying")
            let parked = try await scheduler.timer(key: "e/parked")
            let done = try await scheduler.history(key: "f/done")
            let gone = try await scheduler.timer(key: "f/done") == nil
            seen =
                "c/running \(String(describing: running)), d/retrying \(String(describing: retried)), e/parked \(String(describing: parked)), "
                + "f/done's runs \(done), f/done gone: \(gone)"
            if running?.leaseUntil.map({ $0 > Date().addingTimeInterval(600) }) == true, retried?.lastError != nil,
                retried.map({ $0.readyAt > Date() }) == true, parked?.state == .failed, done.count == 1, gone
            {
                return [holder, retrier, parker]
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw FixtureNotReady(seen: seen)
    }

    struct FixtureNotReady: Error, CustomStringConvertible {
        let seen: String
        var description: String { "the fixture's runners did not bring c/running, d/retrying, e/parked and f/done to their statuses within 30 s: \(seen)" }
    }

    /// Stops the runners and removes the folder.
    func close() async {
        for runner in runners { await runner.shutdown(gracePeriod: .milliseconds(100)) }
        try? FileManager.default.removeItem(at: folder)
    }
}
