import Foundation
import TimerKitDurable

/// Where a database's schema stands against this build's, found without changing it.
enum DurableSchemaState: Equatable {
    /// At ``DurableTimers/schemaVersion``.
    case current
    /// At an older version (0: no TimerKit tables, or no SQLite file): `migrate` brings it up.
    case behind(Int)
    /// At a newer version, written by a later release: this build cannot use it.
    case newer(Int)

    /// The database's version.
    var version: Int {
        switch self {
        case .current: DurableTimers.schemaVersion
        case .behind(let version), .newer(let version): version
        }
    }

    /// Opens the database with ``DurableTimers/SchemaUpgrade/verifyOnly`` and reads its state from
    /// what the opening says. (TimerKitDurable has no call that returns a database's version: the
    /// opening's ``DurableTimerError/schema(reason:)`` names it.)
    static func find(_ store: DurableStoreOptions) async throws -> DurableSchemaState {
        if case .sqlite(let path) = try store.location(), !FileManager.default.fileExists(atPath: path) { return .behind(0) }
        do {
            let timers = try await store.open()
            // A PostgreSQL server that does not answer is found by the first call, not the opening.
            _ = try await timers.count()
            return .current
        } catch DurableTimerError.schema(let reason) {
            if let version = number(after: "is at schema version ", in: reason) {
                return version > DurableTimers.schemaVersion ? .newer(version) : .behind(version)
            }
            if reason.contains("has no TimerKit tables") { return .behind(0) }
            throw DurableTimerError.schema(reason: reason)
        }
    }

    /// The whole number that follows `prefix` in `text`.
    static func number(after prefix: String, in text: String) -> Int? {
        guard let range = text.range(of: prefix) else { return nil }
        return Int(text[range.upperBound...].prefix(while: \.isNumber))
    }
}
