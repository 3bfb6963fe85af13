import Foundation
import GRDB

// Rows and calls: a record's decoding, the serial writes and the reads, and how GRDB's errors
// map to the store's.
extension SQLiteTimerStore {
    static func after(_ cursor: DurableTimerCursor?) -> (String, StatementArguments) {
        guard let cursor else { return ("", []) }
        return ("AND (ready_at_ns, key) > (?, ?)", [cursor.readyAt, cursor.key])
    }

    /// A row as a record, whatever it holds (see ``DurableTimerRecord/init(reading:)``).
    static func record(_ row: Row) -> DurableTimerRecord {
        var reader = SQLiteRowReader(row: row)
        return DurableTimerRecord(reading: &reader)
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the store's executor.
    func write<T>(_ body: (Database) throws -> T) async throws(DurableTimerError) -> T {
        try await withTaskExecutorPreference(executor) { () throws(DurableTimerError) -> T in
            do {
                return try database.writeWithoutTransaction { db in
                    var result: T?
                    try db.inTransaction(.immediate) {
                        result = try body(db)
                        return .commit
                    }
                    return result!
                }
            } catch {
                throw Self.mapped(error, path: path, opening: false)
            }
        }
    }

    func read<T>(_ body: (Database) throws -> T) async throws(DurableTimerError) -> T {
        try await withTaskExecutorPreference(executor) { () throws(DurableTimerError) -> T in
            do {
                return try database.read(body)
            } catch {
                throw Self.mapped(error, path: path, opening: false)
            }
        }
    }

    /// A store failure as a ``DurableTimerError``.
    static func mapped(_ error: any Error, path: String, opening: Bool) -> DurableTimerError {
        if let error = error as? DurableTimerError { return error }
        guard let error = error as? DatabaseError else { return .store(reason: "\(error)") }
        let reason = error.message ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .locked(reason: reason)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .corrupt(path: path, reason: reason)
        case .SQLITE_FULL: return .full(reason: reason)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH: return .cannotOpen(path: path, reason: reason)
        default: return opening ? .cannotOpen(path: path, reason: reason) : .store(reason: reason)
        }
    }
}

extension Database {
    /// Runs `sql` through the connection's statement cache: compiled once, reused by every call.
    func run(_ sql: String, _ arguments: StatementArguments) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func row(_ sql: String, _ arguments: StatementArguments) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }

    func rows(_ sql: String, _ arguments: StatementArguments) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: arguments)
    }

    func value<Value: DatabaseValueConvertible & StatementColumnConvertible>(_ sql: String, _ arguments: StatementArguments) throws -> Value? {
        try Value.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }
}
