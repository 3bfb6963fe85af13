import Foundation
import GRDB

// Rows and calls: a record's decoding, the serial writes and the reads, and how GRDB's errors
// map to the store's.
extension SQLiteTimerStore {
    static func after(_ cursor: DurableTimerCursor?) -> (String, StatementArguments) {
        guard let cursor else { return ("", []) }
        return ("AND (ready_at_ns, key) > (?, ?)", [cursor.readyAt, cursor.key])
    }

    /// A row as a record, whatever it holds: a value of the wrong type, an unknown misfire policy or
    /// rule form (written by hand, or by a newer version) is a ``DurableTimerRecord/defect``, which
    /// the runner parks the timer for. Reading a row never throws and never traps.
    static func record(_ row: Row) -> DurableTimerRecord {
        var reader = SQLiteRowReader(row: row)
        let key = reader.text("key")
        let misfireText = reader.text("misfire")
        let misfire = StoredForms.misfire(from: misfireText)
        if misfire == nil { reader.defects.append("the misfire policy '\(misfireText)' is unknown") }
        let recurrence = StoredForms.recurrence(interval: reader.optionalInteger("interval_ns"), rule: reader.optionalText("rule"))
        if recurrence == nil { reader.defects.append("its calendar rule is in a form this version cannot read") }
        var record = DurableTimerRecord(
            namespace: reader.text("namespace"), key: key, handler: reader.text("handler"), payload: reader.blob("payload"), recurrence: recurrence ?? .none,
            misfire: misfire ?? .once, due: reader.integer("due_ns"))
        record.readyAt = reader.integer("ready_at_ns")
        record.sequence = reader.integer("sequence")
        record.fireCount = reader.integer("fire_count")
        record.attempts = Int(clamping: reader.integer("attempts"))
        record.skipped = Int(clamping: reader.integer("skipped"))
        record.lastError = reader.optionalText("last_error")
        record.isParked = reader.integer("parked") != 0
        record.isPaused = reader.integer("paused") != 0
        record.owner = reader.optionalText("owner")
        record.leaseUntil = reader.optionalInteger("lease_until_ns")
        // A context that does not read is no defect: the timer runs, in a trace of its own.
        var lenient = SQLiteRowReader(row: row)
        record.traceContext = StoredForms.traceContext(from: lenient.optionalText("trace_context"))
        if !reader.defects.isEmpty { record.defect = reader.defects.joined(separator: "; ") }
        return record
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
