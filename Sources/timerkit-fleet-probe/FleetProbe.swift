// One instance of a fleet of durable-timer runners on PostgreSQL, which the fleet tests and the
// benchmark start, kill (SIGKILL) and freeze (SIGSTOP).
//
// usage: timerkit-fleet-probe URL NAMESPACE LOG NAME [--lease-ms N] [--slow-ms N] [--hang] [--until-empty] [--skew-ms N]
//        [--in-transaction TABLE]
//
// URL is postgres://USER[:PASSWORD]@HOST:PORT/DATABASE. Registers the handler "fleet" (payload:
// the due time in ns since 1970, as a string) and runs the namespace's timers on the database's
// time. Each run appends "start KEY SEQUENCE ATTEMPT NAME LATENESS_NS" to LOG before it works and
// "done KEY SEQUENCE NAME" after, each line in one write(2) to a file opened with O_APPEND; a
// --hang handler whose task is cancelled (its timer cancelled, its lease lost) appends
// "cancelled KEY SEQUENCE NAME" and throws. With
// --until-empty it exits once the namespace, having held timers, holds none; otherwise at SIGTERM or SIGINT.
// --skew-ms pretends the host's clock is off by N ms: the runner's offset to the database absorbs it.
// --in-transaction TABLE runs no timers: in one transaction it inserts the row 'order-1' into
// TABLE (id text) and schedules "order-1/expiry" (an hour on), appends "in transaction" to LOG,
// and waits there for ever — for the test that kills a process between its two writes.
import Foundation
import Logging
import PostgresNIO
import TimerKit
import TimerKitDurable
import TimerKitPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
enum FleetProbe {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> Int? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return nil }
            arguments.removeSubrange(index...(index + 1))
            return value
        }
        func flag(_ name: String) -> Bool {
            guard let index = arguments.firstIndex(of: name) else { return false }
            arguments.remove(at: index)
            return true
        }
        let lease = option("--lease-ms") ?? 1_000
        let skew = option("--skew-ms") ?? 0
        let slow = option("--slow-ms") ?? 0
        let hang = flag("--hang")
        var inTransaction: String?
        if let index = arguments.firstIndex(of: "--in-transaction"), index + 1 < arguments.count {
            inTransaction = arguments[index + 1]
            arguments.removeSubrange(index...(index + 1))
        }
        let untilEmpty = flag("--until-empty")
        guard arguments.count == 4, let configuration = PostgresURL.configuration(arguments[0]) else {
            FileHandle.standardError.write(
                Data(
                    "usage: timerkit-fleet-probe URL NAMESPACE LOG NAME [--lease-ms N] [--slow-ms N] [--hang] [--until-empty] [--skew-ms N] [--in-transaction TABLE]\n"
                        .utf8))
            exit(64)
        }
        let (namespace, name) = (arguments[1], arguments[3])
        let log = open(arguments[2], O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard log >= 0 else { exit(66) }
        var options = DurableTimers.Options()
        options.lease = .milliseconds(lease)
        options.retryDelay = .milliseconds(100)
        options.maxRetryDelay = .seconds(1)
        options.catchUpRate = 50_000
        options.maxConcurrentHandlers = 32
        options.onError = { error in FileHandle.standardError.write(Data("\(name): \(error)\n".utf8)) }
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTERM)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        do {
            let timers = try await DurableTimers(postgres: configuration, namespace: namespace, options: options, hostClockSkew: .milliseconds(skew))
            try await timers.register("fleet", payload: String.self) { due, fire in
                let lateness = fire.firedAt.nanosecondsSince1970 - (Int64(due) ?? 0)
                append("start \(fire.key) \(fire.sequence) \(fire.attempt) \(name) \(lateness)", to: log)
                if hang {
                    do {
                        try await Task.sleep(for: .seconds(3600))
                    } catch {
                        append("cancelled \(fire.key) \(fire.sequence) \(name)", to: log)
                        throw error
                    }
                }
                if slow > 0 { try await Task.sleep(for: .milliseconds(slow)) }
                append("done \(fire.key) \(fire.sequence) \(name)", to: log)
            }
            if let table = inTransaction {
                try await scheduleInTransaction(timers, table: table, configuration: configuration, log: log)
            }
            let running = Task { await timers.run() }
            for source in [stop, interrupt] {
                source.setEventHandler { running.cancel() }
                source.resume()
            }
            if untilEmpty {
                var seenTimers = false
                while !running.isCancelled {
                    let count = try? await timers.count()
                    if count == 0, seenTimers { break }
                    if let count, count > 0 { seenTimers = true }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                running.cancel()
            }
            await running.value
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error)\n".utf8))
            exit(1)
        }
        close(log)
    }

    /// The business row and its timer in one transaction, which never ends: the process is
    /// killed in it.
    static func scheduleInTransaction(_ timers: DurableTimers, table: String, configuration: PostgresClient.Configuration, log: Int32) async throws {
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        let logger = Logger(label: "timerkit-fleet-probe")
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO \(unescaped: table) (id) VALUES ('order-1')", logger: logger)
            try await timers.inTransaction(on: connection) {
                try await timers.schedule(key: "order-1/expiry", after: .seconds(3_600), handler: "fleet", payload: "0")
            }
            append("in transaction", to: log)
            try await Task.sleep(for: .seconds(3_600))
        }
        running.cancel()
    }

    /// Appends a line in one `write(2)`.
    static func append(_ line: String, to descriptor: Int32) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
