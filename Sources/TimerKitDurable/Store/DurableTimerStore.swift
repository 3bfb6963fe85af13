/// The seam between the runner (``DurableTimers``) and where timers are kept: SQLite here, a
/// PostgreSQL store beside it. Every method is one atomic step of the store; the runner keeps no
/// state that the store does not also have, except which timers it has armed in memory.
///
/// Time: the runner passes its reading of the durable clock (`now`, nanoseconds since 1970). A store
/// with a clock of its own (a database server's) decides with that instead, and says so.
///
/// Fencing: a claim writes the claiming runner's `owner` id and a lease; completion, renewal and
/// release name the owner and the occurrence's `sequence`, and change nothing unless both still
/// match — so a runner whose lease expired (it was frozen, or too slow) cannot complete or release
/// a timer that another runner claimed since, or that was replaced.
package protocol DurableTimerStore: Sendable {
    /// Stores `record` under its namespace and key. With a timer there already, `conflict` decides:
    /// replace it (a new sequence), keep it (returns `false`), or throw ``DurableTimerError/keyInUse(_:)``.
    /// The store assigns the record's sequence.
    func put(_ record: DurableTimerRecord, conflict: DurableConflict) throws(DurableTimerError) -> Bool

    /// Stores many records in one transaction (each as `put` would, with `conflict`); returns how
    /// many were stored.
    func putAll(_ records: [DurableTimerRecord], conflict: DurableConflict) throws(DurableTimerError) -> Int

    /// Removes the timer under the key; returns it, or `nil` if there was none.
    func delete(namespace: String, key: String) throws(DurableTimerError) -> DurableTimerRecord?

    /// The timer under the key.
    func record(namespace: String, key: String) throws(DurableTimerError) -> DurableTimerRecord?

    /// The namespace's timers in (ready time, key) order, at most `limit`, after `cursor` if given.
    func records(namespace: String, after cursor: DurableTimerCursor?, limit: Int) throws(DurableTimerError) -> [DurableTimerRecord]

    /// The namespace's timers that are not parked and may be claimed by `by` (ready time at or
    /// before it), whose handler is one of `handlers`, in (ready time, key) order after `cursor`,
    /// at most `limit`.
    func ready(namespace: String, by: Int64, handlers: [String], after cursor: DurableTimerCursor?, limit: Int) throws(DurableTimerError)
        -> [DurableTimerRecord]

    /// Claims the timer if it is not parked and ready by `now` (its occurrence has come and no live
    /// lease holds it) — or, `early`, if only no live lease holds it (a manual fire): writes
    /// `owner`, a lease until `leaseUntil` (which is also its new ready time), and one more attempt;
    /// returns the claimed record, or `nil`.
    func claim(namespace: String, key: String, owner: String, now: Int64, leaseUntil: Int64, early: Bool) throws(DurableTimerError) -> DurableTimerRecord?

    /// Ends a claimed occurrence as `outcome` says, if `owner` still holds the timer at `sequence`;
    /// returns whether it did.
    func finish(namespace: String, key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome) throws(DurableTimerError) -> Bool

    /// Extends a claim's lease to `leaseUntil`, if `owner` still holds the timer at `sequence`.
    func renew(namespace: String, key: String, owner: String, sequence: Int64, leaseUntil: Int64) throws(DurableTimerError) -> Bool

    /// Gives a claim back without using up its attempt (a graceful shutdown, a handler no longer
    /// registered), ready again at `readyAt`, if `owner` still holds the timer at `sequence`.
    func release(namespace: String, key: String, owner: String, sequence: Int64, readyAt: Int64) throws(DurableTimerError) -> Bool

    /// Moves a timer that no runner holds to the occurrence `due`, ready at `readyAt` (a new
    /// sequence; attempts and the error cleared; a parked timer is scheduled again); returns the
    /// record as stored, or `nil` if there is none.
    func move(namespace: String, key: String, due: Int64, readyAt: Int64) throws(DurableTimerError) -> DurableTimerRecord?

    /// The namespace's timers whose handler is not one of `handlers`, at most `limit`.
    func orphans(namespace: String, handlers: [String], limit: Int) throws(DurableTimerError) -> [DurableTimerRecord]

    /// How many timers the namespace holds.
    func count(namespace: String) throws(DurableTimerError) -> Int
}

/// A position in (ready time, key) order, for paging.
package struct DurableTimerCursor: Sendable, Hashable {
    package var readyAt: Int64
    package var key: String

    package init(readyAt: Int64, key: String) {
        self.readyAt = readyAt
        self.key = key
    }
}

/// How a claimed occurrence ends (``DurableTimerStore/finish(namespace:key:owner:sequence:outcome:)``).
package enum DurableTimerOutcome: Sendable, Hashable {
    /// A one-shot ran (or its only occurrence was skipped): the timer is removed.
    case delete
    /// The timer continues at occurrence `due` (ready then), a new sequence, attempts cleared;
    /// `fired` adds one to its fire count; `skipped` occurrences are carried into its next fire.
    case advance(due: Int64, skipped: Int, fired: Bool)
    /// The handler threw: try the same occurrence again at `readyAt`, keeping the attempt count.
    case retry(readyAt: Int64, error: String)
    /// The handler failed for the last time, or the payload cannot be decoded: park the timer.
    case park(error: String)
}
