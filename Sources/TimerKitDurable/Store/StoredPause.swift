/// The `paused` column, as both stores write and read it, named once.
///
/// A paused row is parked too, so that every claim and the ready index pass it by; `paused` says
/// why it is parked and what to do when the pause ends: 0, not paused; 1, paused; 2, paused, and
/// parked before the pause began (it stays parked once resumed).
///
/// The conditions are the same text on both stores; the assignments (`SET` lists) differ only in
/// how `parked` spells true, so they are the dialect's.
package enum StoredPause {
    /// The row is not paused (`row`: the table's alias and a dot, when the statement needs one).
    package static func isNotPaused(_ row: String = "") -> String { "\(row)paused = 0" }
    /// The row is paused (by its key, its handler or its namespace).
    package static func isPaused(_ row: String = "") -> String { "\(row)paused <> 0" }
}

extension DurableTimerFilter.Dialect {
    /// `SET`: pauses a row that is not paused, remembering whether it was parked.
    package var pauseAssignments: String { "paused = CASE WHEN \(isParked) THEN 2 ELSE 1 END, parked = \(yes)" }

    /// `SET`: ends a row's pause: it is parked again if it was parked before the pause.
    package var resumeAssignments: String { "parked = \(flag("paused = 2")), paused = 0" }

    /// `SET`: parks a row (its handler failed for good, or its plan ended); a paused row stays
    /// paused, and is parked once resumed.
    package var parkAssignments: String { "parked = \(yes), paused = CASE WHEN paused = 1 THEN 2 ELSE paused END" }

    /// `SET`: unparks a row (a move, a retry): a paused row stays paused (and so parked until it is
    /// resumed), and is no longer parked underneath.
    package var unparkAssignments: String { "parked = \(flag("paused <> 0")), paused = CASE WHEN paused = 2 THEN 1 ELSE paused END" }
}
