// A runner of durable timers that the crash tests start and kill with SIGKILL at random points.
//
// usage: timerkit-durable-probe DATABASE LOG [hang | crash | in-transaction] [--max-attempts N]
//
// Registers the handler "probe" (payload: a string) and runs the timers of DATABASE on the wall
// clock with a one-second lease. Each run appends "start KEY SEQUENCE ATTEMPT MILLISECONDS" to LOG
// before it works and "done KEY SEQUENCE" after (each line in one write(2) to a file opened with
// O_APPEND, so lines of killed processes are whole or absent). With `hang`, handlers never finish;
// with `crash`, a handler ends the process (`fatalError`, as a force-unwrap of a bad payload would).
// The process exits by itself once the database holds no timer it could still run (none, or only
// parked ones), with status 0. With `in-transaction` it runs no timers: DATABASE is the
// application's (a GRDB DatabasePool), and in one transaction it inserts the row 'order-1' into the
// table `orders` (id text) and schedules "order-1/expiry" an hour on, appends "in transaction" to
// LOG and waits there for ever — for the test that kills a process between its two writes.
import Foundation
import GRDB
import TimerKitDurable

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
enum Probe {
    static func main() async throws {
        var arguments = CommandLine.arguments
        var maxAttempts = 5
        if let index = arguments.firstIndex(of: "--max-attempts"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
            maxAttempts = value
            arguments.removeSubrange(index...(index + 1))
        }
        guard arguments.count >= 3 else {
            FileHandle.standardError.write(Data("usage: timerkit-durable-probe DATABASE LOG [hang | crash | in-transaction] [--max-attempts N]\n".utf8))
            exit(64)
        }
        let mode = arguments.count > 3 ? arguments[3] : ""
        let log = open(arguments[2], O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard log >= 0 else { exit(66) }
        var options = DurableTimers.Options()
        options.lease = .seconds(1)
        options.retryDelay = .milliseconds(100)
        options.catchUpRate = 5_000
        options.maxConcurrentHandlers = 8
        options.maxAttempts = maxAttempts
        options.durability = .normal
        options.onError = { error in FileHandle.standardError.write(Data("probe: \(error)\n".utf8)) }
        // Scoped, so that the runner is released before the process exits (LeakSanitizer reads
        // the side table of a weak reference to an object alive at exit as a leak).
        if mode == "in-transaction" {
            try await scheduleInTransaction(path: arguments[1], log: log)
        }
        do {
            let timers = try DurableTimers(path: arguments[1], options: options)
            try await timers.register("probe", payload: String.self) { _, fire in
                let milliseconds = Int64(Date().timeIntervalSince1970 * 1000)
                append("start \(fire.key) \(fire.sequence) \(fire.attempt) \(milliseconds)", to: log)
                if mode == "crash" { fatalError("the probe's handler crashes the process, as asked") }
                if mode == "hang" { try await Task.sleep(for: .seconds(3600)) }
                try await Task.sleep(for: .microseconds(Int.random(in: 0...2_000)))
                append("done \(fire.key) \(fire.sequence)", to: log)
            }
            await timers.start()
            while try await !onlyParkedLeft(timers) {
                try await Task.sleep(for: .milliseconds(20))
            }
            await timers.shutdown()
        }
        close(log)
    }

    /// The business row and its timer in one transaction, which never ends: the process is
    /// killed in it.
    static func scheduleInTransaction(path: String, log: Int32) async throws {
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(10)
        let database = try DatabasePool(path: path, configuration: configuration)
        try await database.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY)") }
        let timers = try DurableTimers(database: database)
        try await timers.register("probe", payload: String.self) { _, _ in }
        try await database.write { db in
            try db.execute(sql: "INSERT INTO orders (id) VALUES ('order-1')")
            try timers.schedule(key: "order-1/expiry", after: .seconds(3_600), handler: "probe", payload: "order-1", in: db)
            append("in transaction", to: log)
            sleep(3_600)
        }
    }

    /// Whether the database holds no timer the runner could still run.
    static func onlyParkedLeft(_ timers: DurableTimers) async throws -> Bool {
        let count = try await timers.count()
        guard count > 0 else { return true }
        guard count <= 100 else { return false }
        return try await timers.timers(limit: 100).allSatisfy { $0.state == .failed }
    }

    /// Appends a line in one `write(2)`.
    static func append(_ line: String, to descriptor: Int32) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
