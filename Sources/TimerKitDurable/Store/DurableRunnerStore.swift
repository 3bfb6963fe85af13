/// What a runner needs of a store: the writes that schedule, move and remove timers, the loads
/// that arm them, the fenced steps of a run (claim, sweep, renew, finish, release), the
/// instance's heartbeat and history pruning, and the store's clock and notifications. Every
/// method is one atomic step of the store; the runner keeps no state that the store does not also
/// have, except which timers it has armed in memory.
///
/// Time: the runner passes its reading of the durable clock (`now`, nanoseconds since 1970). A store
/// with a clock of its own (a database server's) decides with that instead, and says so.
///
/// Fencing: a claim writes a token of its own as the row's `owner` (the runner's id and the claim
/// round's number, `id/n`) and a lease; completion, renewal and release name that token and the
/// occurrence's `sequence`, and change nothing unless both still match — so a run whose lease
/// expired (its process was frozen, or too slow) cannot complete or release a timer that another
/// claim took since, even one of the same runner, or that was replaced.
package protocol DurableRunnerStore: Sendable {
    /// Stores `record` under its namespace and key. With a timer there already, `conflict` decides:
    /// replace it (a new sequence), keep it (returns `false`), or throw ``DurableTimerError/keyInUse(_:)``.
    /// The store assigns the record's sequence.
    func put(_ record: DurableTimerRecord, conflict: DurableConflict) async throws(DurableTimerError) -> Bool

    /// Stores many records in one transaction (each as `put` would, with `conflict`); returns how
    /// many were stored.
    func putAll(_ records: [DurableTimerRecord], conflict: DurableConflict) async throws(DurableTimerError) -> Int

    /// Removes the timer under the key; returns it, and whether a live claim held it (a runner
    /// was running it, by the store's clock at `now`), or `nil` if there was none.
    func delete(namespace: String, key: String, now: Int64) async throws(DurableTimerError) -> DurableRemoval?

    /// The timer under the key.
    func record(namespace: String, key: String) async throws(DurableTimerError) -> DurableTimerRecord?

    /// The namespace's timers in (ready time, key) order, at most `limit`, after `cursor` if given.
    func records(namespace: String, after cursor: DurableTimerCursor?, limit: Int) async throws(DurableTimerError) -> [DurableTimerRecord]

    /// The keys and ready times of the namespace's timers that are not parked and may be claimed
    /// by `by` (ready time at or before it), whose handler is one of `handlers`, in (ready time,
    /// key) order after `cursor`, at most `limit`. No payloads: arming needs none (the claim
    /// reads the row), and a horizon of a million timers must not hold a million payloads.
    func ready(namespace: String, by: Int64, handlers: [String], after cursor: DurableTimerCursor?, limit: Int) async throws(DurableTimerError)
        -> [DurableReadyTimer]

    /// Claims the timer if it is not parked and ready by `now` (its occurrence has come and no live
    /// lease holds it) — or, `early`, if only no live lease holds it (a manual fire): writes
    /// `owner`, a lease until `leaseUntil` (which is also its new ready time), and one more attempt.
    /// A store on a clock of its own decides "by now" and the lease's expiry on that clock (the
    /// lease lasts `leaseUntil - now`). Another runner's claim waits for no lock: a row that is
    /// being claimed elsewhere is not ready.
    func claim(namespace: String, key: String, owner: String, now: Int64, leaseUntil: Int64, early: Bool) async throws(DurableTimerError) -> DurableClaim

    /// Claims, in one step, those of `keys` that are ready by `now` (not parked, their occurrence
    /// come, no live lease): as ``claim(namespace:key:owner:now:leaseUntil:early:)`` does for
    /// each. Reports the ready time of each other key still stored and not parked (held by another
    /// runner, or moved).
    func claim(namespace: String, keys: [String], owner: String, now: Int64, leaseUntil: Int64) async throws(DurableTimerError) -> DurableClaimBatch

    /// Claims, in one step, up to `limit` of the namespace's timers that are ready by `now` (not
    /// parked, their occurrence come, no live lease) and whose handler is one of `handlers`, the
    /// earliest first, as ``claim(namespace:key:owner:now:leaseUntil:early:)`` claims one: the
    /// sweep of a backlog, which no runner has armed key by key. Rows that another claim holds
    /// locked are skipped, not waited for, so runners sweeping at once take disjoint rows. Rows
    /// whose owner is one of `excluding` are skipped too: claims this runner still holds, whose
    /// lease may have lapsed while it runs them (a sweep must not take them again).
    func sweep(namespace: String, handlers: [String], owner: String, excluding: [String], now: Int64, leaseUntil: Int64, limit: Int)
        async throws(DurableTimerError)
        -> [DurableTimerRecord]

    /// Ends a claimed occurrence as `outcome` says, if `owner` still holds the timer at `sequence`;
    /// returns whether it did. When it did, `run` is added to the run history in the same write,
    /// keeping the timer's last `keep` runs (none recorded when `keep` is 0).
    func finish(namespace: String, key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome, run: DurableTimerRun?, keep: Int)
        async throws(DurableTimerError) -> Bool

    /// Removes the one-shots in `completed` whose occurrence ran, each if its claim's token still
    /// holds it at its sequence, in one write, recording each removed one's run (up to `keep` per
    /// timer; none when 0); returns the keys it removed. (``finish(namespace:key:owner:sequence:outcome:)``
    /// with ``DurableTimerOutcome/delete`` for many at once: the runner gathers the completions of
    /// one moment into one call.)
    func finishAll(namespace: String, completed: [DurableCompletion], keep: Int) async throws(DurableTimerError) -> Set<StoredKey>

    /// Extends the lease of each of `claims` that its owner still holds at its sequence, in one
    /// write, to `leaseUntil` (a store on a clock of its own: for `leaseUntil - now` from its
    /// now); returns the keys it extended.
    func renewAll(namespace: String, claims: [DurableHeldClaim], now: Int64, leaseUntil: Int64) async throws(DurableTimerError) -> Set<StoredKey>

    /// Gives a claim back without using up its attempt (a graceful shutdown, a handler no longer
    /// registered), ready again at `readyAt`, if `owner` still holds the timer at `sequence`.
    func release(namespace: String, key: String, owner: String, sequence: Int64, readyAt: Int64) async throws(DurableTimerError) -> Bool

    /// Moves a timer that no runner holds to the occurrence `due`, ready at `readyAt` (a new
    /// sequence; attempts and the error cleared; a parked timer is scheduled again); returns the
    /// record as stored, or `nil` if there is none. With `ifSequence`, only that occurrence moves
    /// (a move computed from a read is fenced by it).
    func move(namespace: String, key: String, due: Int64, readyAt: Int64, ifSequence: Int64?) async throws(DurableTimerError) -> DurableTimerRecord?

    /// Removes at most `limit` runs of the namespace that ended before `endedBefore`, the oldest
    /// first, in one short write; returns how many.
    func pruneHistory(namespace: String, endedBefore: Int64, limit: Int) async throws(DurableTimerError) -> Int

    /// Records that `instance` is alive (its handlers, the store's time now); replaces its last record.
    func heartbeat(_ instance: DurableInstance) async throws(DurableTimerError)

    /// Forgets an instance that shut down.
    func removeInstance(namespace: String, id: String) async throws(DurableTimerError)

    /// The store's clock minus the runner's host clock, in nanoseconds, as last measured: 0 for a
    /// store that decides with the runner's clock (SQLite). The runner reads "now" as its clock
    /// plus this, and arms wake-ups at a store instant minus this.
    var clockOffset: Int64 { get }

    /// How far the host's clock is pretended to be off (the fleet tests' injected skew): the runner
    /// reads its clock plus this as the host's time. 0 but in tests.
    var hostSkew: Int64 { get }

    /// Where the store's calls run, if it keeps them on an executor of its own (SQLite: a serial
    /// queue for its blocking calls); the runner then does its own work there too, saving a hop
    /// per call. `nil` for a store whose calls suspend rather than block (PostgreSQL).
    var executor: (any TaskExecutor)? { get }

    /// What other runners change, as the store learns of it (PostgreSQL's `NOTIFY`), or `nil` for
    /// a store that has no such channel (SQLite: a runner sees other processes' writes at its next
    /// load of the horizon).
    func changes(namespace: String) -> AsyncStream<DurableTimerChange>?

    /// The store's ``clockOffset`` each time a measurement moves it by more than the measurement's
    /// own uncertainty (the runner re-arms its future wake-ups then), or `nil` for a store whose
    /// offset never moves (SQLite).
    func clockOffsetChanges() -> AsyncStream<Int64>?

    /// Returns once the store can serve calls — at once, unless it was made while its database
    /// could not be reached and opens in the background (PostgreSQL) — or when the calling task
    /// is cancelled.
    func untilOpen() async

    /// Closes the store's connections. Idempotent.
    func close() async
}

/// What ``DurableRunnerStore/claim(namespace:key:owner:now:leaseUntil:early:)`` found.
package enum DurableClaim: Sendable {
    /// Claimed: the record as stored now, with this runner's lease.
    case claimed(DurableTimerRecord)
    /// Not ready yet, or held by a live lease: it may next be claimed at `readyAt`.
    case notReady(readyAt: Int64)
    /// No timer under the key, or it is parked.
    case gone
}

/// What ``DurableRunnerStore/claim(namespace:keys:owner:now:leaseUntil:)`` found.
package struct DurableClaimBatch: Sendable {
    /// The records claimed, with this runner's lease.
    package var claimed: [DurableTimerRecord]
    /// The ready time of each key that was not claimed and is still stored, not parked.
    package var waiting: [StoredKey: Int64]
    /// Those of `waiting` that a claim holds (another runner's, its lease's end as the ready
    /// time) or is taking (ready, but locked by another runner's claim under way), as opposed to
    /// timers not due yet.
    package var held: Set<StoredKey>

    package init(claimed: [DurableTimerRecord], waiting: [StoredKey: Int64], held: Set<StoredKey> = []) {
        self.claimed = claimed
        self.waiting = waiting
        self.held = held
    }
}

/// A change another runner made, or that its connection may have missed.
package enum DurableTimerChange: Sendable, Hashable {
    /// A timer was written ready at `readyAt` (in the store's time), for `handler`.
    case ready(key: String, readyAt: Int64, handler: String)
    /// The timer under the key was removed.
    case removed(key: String)
    /// Changes may have been missed (the connection dropped and came back): load the horizon again.
    case reload
    /// Timers were written ready from `from` through `through` (a batch too large to tell of
    /// each): load that window of the horizon again.
    case window(from: Int64, through: Int64)
}

/// A timer that may be claimed, as ``DurableRunnerStore/ready(namespace:by:handlers:after:limit:)``
/// lists it: its key and ready time.
package struct DurableReadyTimer: Sendable, Hashable {
    package var key: String
    package var readyAt: Int64
    package var handler: String

    package init(key: String, readyAt: Int64, handler: String) {
        self.key = key
        self.readyAt = readyAt
        self.handler = handler
    }
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

/// How a claimed occurrence ends (``DurableRunnerStore/finish(namespace:key:owner:sequence:outcome:)``).
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

extension DurableRunnerStore {
    /// Ends a claimed occurrence without recording a run.
    package func finish(namespace: String, key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome) async throws(DurableTimerError) -> Bool {
        try await finish(namespace: namespace, key: key, owner: owner, sequence: sequence, outcome: outcome, run: nil, keep: 0)
    }

    /// Removes one-shots that ran without recording their runs.
    package func finishAll(namespace: String, completed: [DurableCompletion]) async throws(DurableTimerError) -> Set<StoredKey> {
        try await finishAll(namespace: namespace, completed: completed, keep: 0)
    }

    package func untilOpen() async {}
    package func clockOffsetChanges() -> AsyncStream<Int64>? { nil }
    package var hostSkew: Int64 { 0 }
    package var executor: (any TaskExecutor)? { nil }
}

/// A one-shot whose occurrence ran, to be removed (``DurableRunnerStore/finishAll(namespace:completed:)``).
package struct DurableCompletion: Sendable, Hashable {
    package var key: String
    /// The claim's token (the owner column it wrote).
    package var owner: String
    package var sequence: Int64
    /// The run to record in the history when the removal lands.
    package var run: DurableTimerRun?

    package init(key: String, owner: String, sequence: Int64, run: DurableTimerRun? = nil) {
        self.key = key
        self.owner = owner
        self.sequence = sequence
        self.run = run
    }
}

/// A recorded pause (``DurableOperatingStore/pauses(namespace:)``).
package struct DurablePause: Sendable, Hashable {
    /// The paused handler, or `nil` for the whole namespace.
    package var handler: String?
    /// When, in the store's time.
    package var since: Int64

    package init(handler: String?, since: Int64) {
        self.handler = handler
        self.since = since
    }
}

/// One handler's timers counted by status (``DurableOperatingStore/stats(namespace:now:since:)``).
package struct DurableHandlerCounts: Sendable, Hashable {
    package var handler: String
    package var counts: [DurableTimerQuery.Status: Int]
    /// The earliest ready time among its due timers.
    package var oldestDue: Int64?
    /// Its repeating timers whose occurrence is late.
    package var late: Int
    /// The lateness of its runs that started in the window, in nanoseconds, oldest first.
    package var lateness: [Int64]

    package init(handler: String, counts: [DurableTimerQuery.Status: Int] = [:], oldestDue: Int64? = nil, late: Int = 0, lateness: [Int64] = []) {
        self.handler = handler
        self.counts = counts
        self.oldestDue = oldestDue
        self.late = late
        self.lateness = lateness
    }
}

/// A claim a runner holds, for a renewal: the key, the claim's token, the occurrence.
package typealias DurableHeldClaim = DurableCompletion

/// What ``DurableRunnerStore/delete(namespace:key:now:)`` removed.
package struct DurableRemoval: Sendable, Hashable {
    /// The timer as it was stored.
    package var record: DurableTimerRecord
    /// Whether a claim whose lease had not expired held it: its handler was running (or about to
    /// run) on the claim's owner.
    package var wasClaimed: Bool

    package init(record: DurableTimerRecord, wasClaimed: Bool) {
        self.record = record
        self.wasClaimed = wasClaimed
    }
}

extension DurableClaim {
    /// The claimed record, or `nil` if the claim found none ready.
    package var record: DurableTimerRecord? {
        if case .claimed(let record) = self { record } else { nil }
    }
}
