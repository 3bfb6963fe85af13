import Foundation

/// A row of the timers table, read by column name without throwing or trapping: a value missing
/// or of the wrong type reads as a placeholder and is noted in ``defects``.
///
/// Each store reads its rows through a reader of its own; ``DurableTimerRecord/init(reading:)``
/// decodes a record from any of them, so both stores read a row the same way and describe a bad
/// one in the same words.
package protocol StoredColumnReader {
    /// What could not be read, each in words.
    var defects: [String] { get set }

    /// An integer column; `nil` when it holds NULL.
    mutating func optionalInteger(_ column: String) -> Int64?

    /// A text column; `nil` when it holds NULL.
    mutating func optionalText(_ column: String) -> String?

    /// A binary column.
    mutating func blob(_ column: String) -> Data

    /// A yes-or-no column (an integer in SQLite, a boolean in PostgreSQL).
    mutating func flag(_ column: String) -> Bool
}

extension StoredColumnReader {
    /// An integer column that must hold one.
    package mutating func integer(_ column: String) -> Int64 { optionalInteger(column) ?? missing(column, 0) }

    /// A text column that must hold one.
    package mutating func text(_ column: String) -> String { optionalText(column) ?? missing(column, "") }

    /// Notes that `column` is empty, and reads it as `placeholder`.
    package mutating func missing<T>(_ column: String, _ placeholder: T) -> T {
        defects.append("\(column) is empty")
        return placeholder
    }
}

extension DurableTimerRecord {
    /// A row of the timers table as a record, whatever it holds: a value of the wrong type, an
    /// unknown misfire policy or rule form (written by hand, or by a newer version) is a
    /// ``defect``, which the runner parks the timer for. Reading a row never throws and never
    /// traps.
    package init(reading row: inout some StoredColumnReader) {
        let misfireText = row.text("misfire")
        let misfire = StoredForms.misfire(from: misfireText)
        if misfire == nil { row.defects.append("the misfire policy '\(misfireText)' is unknown") }
        let recurrence = StoredForms.recurrence(interval: row.optionalInteger("interval_ns"), rule: row.optionalText("rule"))
        if recurrence == nil { row.defects.append("its calendar rule is in a form this version cannot read") }
        self.init(
            namespace: row.text("namespace"), key: row.text("key"), handler: row.text("handler"), payload: row.blob("payload"),
            recurrence: recurrence ?? .none, misfire: misfire ?? .once, due: row.integer("due_ns"))
        readyAt = row.integer("ready_at_ns")
        sequence = row.integer("sequence")
        fireCount = row.integer("fire_count")
        attempts = Int(clamping: row.integer("attempts"))
        skipped = Int(clamping: row.integer("skipped"))
        lastError = row.optionalText("last_error")
        isParked = row.flag("parked")
        isPaused = row.integer("paused") != 0
        owner = row.optionalText("owner")
        leaseUntil = row.optionalInteger("lease_until_ns")
        // A context that does not read is no defect: the timer runs, in a trace of its own.
        let noted = row.defects.count
        traceContext = StoredForms.traceContext(from: row.optionalText("trace_context"))
        row.defects.removeSubrange(noted...)
        if !row.defects.isEmpty { defect = row.defects.joined(separator: "; ") }
    }
}
