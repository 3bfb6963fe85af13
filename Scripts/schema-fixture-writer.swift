// The writer Scripts/make-schema-fixtures builds against TimerKit 0.1.0 (its public API only):
// the same timers into a SQLite file and a PostgreSQL database, as an application of that release
// stored them. Not part of the package.
import Foundation
import PostgresNIO
import TimerKit
import TimerKitDurable
import TimerKitPostgres
import TimerKitTesting

struct Note: Codable, Sendable { var text: String }
struct Failure: Error {}

/// 2026-11-25 00:00:00 UTC, where the tests' virtual clocks start.
let epoch: Int64 = 1_795_564_800 * 1_000_000_000
func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: Double(epoch) / 1e9 + seconds) }

/// Every form a row can take in 0.1.0: one-shots, a batch, a grid, a calendar rule, each misfire
/// policy, a key outside ASCII, a second namespace, and (`fail`) a parked timer.
func write(_ timers: DurableTimers, namespace: String) async throws {
    try await timers.register("note", payload: Note.self) { _, _ in }
    try await timers.register("fail", payload: Note.self) { _, _ in throw Failure() }
    try await timers.schedule(key: "once", at: at(60), handler: "note", payload: Note(text: "\(namespace) once"))
    try await timers.schedule(key: "within", at: at(90), handler: "note", payload: Note(text: "\(namespace) within"), misfire: .within(.seconds(5)))
    try await timers.schedule(key: "every-10s", every: .seconds(10), first: at(30), handler: "note", payload: Note(text: "\(namespace) every"), misfire: .skip)
    try await timers.schedule(
        key: "daily-berlin", rule: try .daily(at: 9, in: TimeZone(identifier: "Europe/Berlin")!), handler: "note", payload: Note(text: "\(namespace) daily"),
        misfire: .all(max: 3))
    try await timers.schedule(
        [(key: "batch-1", at: at(120), payload: Note(text: "\(namespace) b1")), (key: "batch-2", at: at(121), payload: Note(text: "\(namespace) b2"))],
        handler: "note")
    try await timers.schedule(key: "café ☕", at: at(130), handler: "note", payload: Note(text: "\(namespace) unicode"))
}

let arguments = CommandLine.arguments
var options = DurableTimers.Options()
options.maxAttempts = 1
options.onError = { _ in }

// SQLite, on a virtual clock at the epoch: the "fail" timer runs once at 1 s and is parked.
let virtual = VirtualClock(start: .nanoseconds(epoch))
for namespace in ["default", "other"] {
    let timers = try DurableTimers(path: arguments[1], namespace: namespace, clock: virtual.clock, options: options)
    try await write(timers, namespace: namespace)
}
let sqlite = try DurableTimers(path: arguments[1], clock: virtual.clock, options: options)
try await sqlite.register("fail", payload: Note.self) { _, _ in throw Failure() }
try await sqlite.schedule(key: "parked", at: at(1), handler: "fail", payload: Note(text: "parked"))
await sqlite.start()
await virtual.advance(by: .seconds(2))
await sqlite.shutdown()

// PostgreSQL, on the database's clock: the "fail" timer is due at once and parked.
let configuration = PostgresURL.configuration(arguments[2])!
for namespace in ["default", "other"] {
    let timers = try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
    try await write(timers, namespace: namespace)
    await timers.shutdown()
}
let postgres = try await DurableTimers(postgres: configuration, options: options)
try await postgres.register("fail", payload: Note.self) { _, _ in throw Failure() }
try await postgres.schedule(key: "parked", after: .zero, handler: "fail", payload: Note(text: "parked"))
await postgres.start()
while try await postgres.timer(key: "parked")?.state != .failed { try await Task.sleep(for: .milliseconds(50)) }
await postgres.shutdown()
