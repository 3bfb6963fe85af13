/// The sweep of a backlog: overdue timers that wait in the store armed by no one (a load of the
/// horizon leaves the overdue ones there, a restart after downtime finds thousands) are claimed
/// by sweep rounds, the earliest first, as far as the free slots and the catch-up credit allow.
///
/// The credit grows by ``creditPerTick`` each ``tick``, up to two ticks' worth, so that a backlog
/// drains at the catch-up rate. While woken keys and the backlog both wait, claim rounds take
/// turns (``isTurn``): on-time work that keeps every slot busy does not starve the backlog, nor the
/// backlog it. A handler whose slots were all taken when a sweep went is left out of it; once it
/// has room, the room is kept for the next sweep (``owes(_:)``), or its backlog would wait for
/// ever behind its timers coming due on time.
///
/// A sweep waits for half the slots to be free, or for the next tick (``mayStart(freeSlots:capacity:anyHandlerHasRoom:)``).
/// Short handlers free their slots one by one, microseconds apart: a sweep started at the first
/// would take one row while the others free. (Measured on 20,000 overdue, sweeps averaged 32 rows
/// of 64 slots with and without this rule: BENCHMARKS.md.)
struct BacklogSweep: Sendable, Equatable {
    /// What the runner should do when a backlog ends.
    enum Check: Sendable, Equatable {
        /// Look again after the retry delay: the sweep failed.
        case afterRetryDelay
        /// Look again after a lease: rows other runners' sweeps held may come back when a claim
        /// lapses (their process died).
        case afterLease
    }

    /// How often the credit grows, in nanoseconds.
    let tick: Int64
    /// How much it grows each tick.
    let creditPerTick: Int

    /// Overdue timers may wait in the store: sweeps go on until one finds fewer than it asked for.
    private(set) var isPending = false
    /// Timers the sweeps may still claim.
    private(set) var credit = 0
    private(set) var isTickArmed = false
    /// The next claim round is a sweep (a round of woken keys went while the backlog waited).
    private(set) var isTurn = false
    /// A tick came since the last sweep started: a sweep may go with fewer than half the slots.
    private(set) var tickedSinceSweep = true
    /// The handler slots the sweep in flight took (its limit), or 0.
    private(set) var inFlight = 0
    /// What the sweeps of this backlog claimed so far.
    private var swept = 0
    /// Handlers whose part of the backlog a sweep left out (their slots were all taken).
    private var leftTo: Set<String> = []
    /// The handlers the sweep in flight left out.
    private(set) var skipped: [String] = []
    /// Handlers whose left-out backlog has room again, kept for the next sweep.
    private var owed: Set<String> = []

    init(tick: Int64, creditPerTick: Int) {
        self.tick = tick
        self.creditPerTick = creditPerTick
    }

    /// Whether the room of `handler` is kept for the next sweep.
    func owes(_ handler: String) -> Bool { owed.contains(handler) }

    /// A backlog may wait: sweeps go (with a tenth of a tick's credit at once, so that a short
    /// backlog needs no wait), unless one is under way already.
    mutating func begin() {
        guard !isPending else { return }
        isPending = true
        swept = 0
        credit = max(credit, creditPerTick / 10, 1)
    }

    /// Arms the tick while a backlog waits, unless it is armed: `true` when the caller schedules it.
    mutating func armTick() -> Bool {
        guard isPending, !isTickArmed else { return false }
        isTickArmed = true
        return true
    }

    /// The tick came: the credit grows by a tick's worth, up to two ticks' worth (credit unspent
    /// while every slot was busy does not pile up into a burst). `false` when no backlog waits.
    mutating func tickCame() -> Bool {
        isTickArmed = false
        tickedSinceSweep = true
        guard isPending else { return false }
        // A tick's credit is at most 2^40 (``RunnerStateMachine/Configuration/catchUp(rate:)``):
        // no overflow here.
        credit = min(credit + creditPerTick, 2 * creditPerTick)
        return true
    }

    /// Handlers left out of the backlog that have room again (`hasRoom`): their backlog is swept
    /// next, and their room kept for it. `true` when there were any.
    mutating func revive(where hasRoom: (String) -> Bool) -> Bool {
        let revived = leftTo.filter(hasRoom)
        guard !revived.isEmpty else { return false }
        leftTo.subtract(revived)
        owed.formUnion(revived)
        begin()
        isTurn = true
        return true
    }

    /// A round of woken keys went: the sweep's turn is next, if a backlog waits.
    mutating func keysWent() {
        isTurn = isPending
    }

    /// Whether a sweep may start, given the free slots of `capacity` and whether any handler here
    /// has room: at least half the slots free, or a tick came since the last sweep (handlers that
    /// hold their slots long still get each free one within a tick).
    func mayStart(freeSlots: Int, capacity: Int, anyHandlerHasRoom: @autoclosure () -> Bool) -> Bool {
        isPending && freeSlots > 0 && credit > 0 && (2 * freeSlots >= capacity || tickedSinceSweep) && anyHandlerHasRoom()
    }

    /// Starts a sweep of at most `freeSlots`, leaving out `skipping` (handlers without room):
    /// returns its limit, the slots it takes.
    mutating func start(freeSlots: Int, skipping: [String]) -> Int {
        let limit = min(freeSlots, credit)
        isTurn = false
        tickedSinceSweep = false
        credit -= limit
        inFlight = limit
        skipped = skipping
        owed = []
        return limit
    }

    /// The sweep in flight ended: it found `found` of the `limit` it asked for (`nil`: it failed).
    /// Returns when to look at the store again if the backlog ended.
    mutating func ended(found: Int?, limit: Int) -> Check? {
        inFlight = 0
        guard let found else {
            guard isPending else { return nil }
            isPending = false
            return .afterRetryDelay
        }
        swept += found
        leftTo.formUnion(skipped)
        guard found < limit, isPending else { return nil }
        isPending = false
        return swept > 0 ? .afterLease : nil
    }

    /// The runner stops: no backlog is swept any more.
    mutating func stop() {
        isPending = false
        leftTo = []
        owed = []
    }
}
