import Foundation
import TimerKitTesting

@testable import TimerKitDurable

// A model world for the runner's state machine: several processes, each a real
// `RunnerStateMachine`, one store (a model of the SQL statements: fenced by the claim's token and
// the sequence, leases on the store's clock), and faults — crashes, freezes, store failures
// (refused, or applied with a lost answer), clock steps, shutdowns, cancels from anywhere, lost
// notifications. Time is discrete; everything a healthy process does happens promptly.
//
// The checks it makes after every event are in `RunnerModelTests`.

typealias Machine = RunnerStateMachine

/// The model's settings, in nanoseconds (the machine's own constants are real durations).
enum ModelSettings {
    static let millisecond: Int64 = 1_000_000
    static let lease = 3_000 * millisecond
    static let horizon = 10_000 * millisecond
    static let handlerTimeout = 7_000 * millisecond
    static let maxAttempts = 3
    /// The second handler's policy: one run at a time per process, a shorter lease.
    static let limitedHandler = "g"
    static let limitedLease = 2_000 * millisecond
    static var limitedPolicy: Machine.HandlerPolicy { Machine.HandlerPolicy(maxConcurrentRuns: 1, lease: limitedLease) }
    static func lease(for handler: String) -> Int64 { handler == limitedHandler ? limitedLease : lease }
    static func configuration(_ owner: String) -> Machine.Configuration {
        // A slow catch-up (20 a second: a tick of 50 ms, one claim each), so that sweeps are
        // rate-bound as often as slot-bound.
        let catchUp = Machine.Configuration.catchUp(rate: 20)
        return Machine.Configuration(
            owner: owner, maxConcurrentHandlers: 2, maxAttempts: maxAttempts, lease: lease, retryDelay: 500 * millisecond,
            maxRetryDelay: 2_000 * millisecond, grace: 0, sweepTick: catchUp.tick, sweepCreditPerTick: catchUp.credit)
    }
    /// How far back a refill arms timers (the runner's `recentlyDue`): older ones are swept.
    static let recentlyDue = 1_000 * millisecond
    /// The longest a healthy process's store call takes: well inside a renewal period.
    static let maximumCallDelay = 300 * millisecond
}

/// A row of the model store.
struct ModelRow {
    var handler: String
    var due: Int64
    var readyAt: Int64
    var interval: Int64?
    var sequence: Int64
    var attempts = 0
    var owner: String?
    var leaseUntil: Int64?
    var parked = false
    var lastError: String?
}

/// The store: what the SQL of both stores does, on the store's own clock (`now`).
struct ModelStore {
    var rows: [String: ModelRow] = [:]
    var nextSequence: Int64 = 1

    mutating func put(_ key: String, handler: String, due: Int64, interval: Int64?) {
        rows[key] = ModelRow(handler: handler, due: due, readyAt: due, interval: interval, sequence: nextSequence)
        nextSequence += 1
    }

    func record(_ key: String) -> DurableTimerRecord? {
        guard let row = rows[key] else { return nil }
        var record = DurableTimerRecord(
            namespace: "model", key: key, handler: row.handler, payload: Data(), recurrence: row.interval.map { .interval($0) } ?? .none, misfire: .once,
            due: row.due)
        record.readyAt = row.readyAt
        record.sequence = row.sequence
        record.attempts = row.attempts
        record.owner = row.owner
        record.leaseUntil = row.leaseUntil
        record.isParked = row.parked
        return record
    }

    /// A claim of `key` at `now` for `lease`; `early`: only no live lease needed (a manual fire).
    mutating func claim(_ key: String, owner: String, now: Int64, lease: Int64, early: Bool) -> Machine.ClaimResult {
        guard var row = rows[key], !row.parked else { return .gone }
        let free = early ? (row.owner == nil || (row.leaseUntil ?? .min) <= now) : row.readyAt <= now
        guard free else { return row.owner != nil && !early ? .heldElsewhere(until: row.readyAt) : .notReady(readyAt: row.readyAt) }
        row.owner = owner
        row.leaseUntil = now + lease
        row.readyAt = now + lease
        row.attempts += 1
        rows[key] = row
        return .claimed(record(key)!)
    }

    /// A sweep: claims up to `limit` rows ready by `now`, the earliest first (the SQL skips rows
    /// locked by a claim in flight; here every call is atomic).
    mutating func sweep(owner: String, excluding: [String], skipping: [String], now: Int64, lease: Int64, limit: Int) -> [DurableTimerRecord] {
        let ready = rows.filter {
            !$0.value.parked && $0.value.readyAt <= now && !excluding.contains($0.value.owner ?? "") && !skipping.contains($0.value.handler)
        }.sorted {
            ($0.value.readyAt, $0.key) < ($1.value.readyAt, $1.key)
        }
        return ready.prefix(limit).compactMap { key, _ in
            if case .claimed(let record) = claim(key, owner: owner, now: now, lease: lease, early: false) { record } else { nil }
        }
    }

    mutating func finish(_ key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome) -> Bool {
        guard var row = rows[key], row.owner == owner, row.sequence == sequence else { return false }
        switch outcome {
        case .delete:
            rows[key] = nil
            return true
        case .advance(let due, _, _):
            row.due = due
            row.readyAt = due
            row.sequence = nextSequence
            nextSequence += 1
            row.attempts = 0
            row.lastError = nil
        case .retry(let readyAt, let error):
            row.readyAt = readyAt
            row.lastError = error
        case .park(let error):
            row.parked = true
            row.lastError = error
        }
        row.owner = nil
        row.leaseUntil = nil
        rows[key] = row
        return true
    }

    /// Renews claims, each for the lease it asks (its end less the `reading` it was asked at).
    mutating func renew(_ claims: [Machine.HeldClaim], now: Int64, reading: Int64) -> Set<StoredKey> {
        var renewed: Set<StoredKey> = []
        for claim in claims {
            guard var row = rows[claim.key.string], row.owner == claim.token, row.sequence == claim.sequence else { continue }
            row.leaseUntil = now + (claim.leaseUntil - reading)
            row.readyAt = row.leaseUntil!
            rows[claim.key.string] = row
            renewed.insert(claim.key)
        }
        return renewed
    }

    mutating func release(_ key: String, owner: String, sequence: Int64, readyAt: Int64) -> Bool {
        guard var row = rows[key], row.owner == owner, row.sequence == sequence else { return false }
        row.readyAt = readyAt
        row.attempts = max(row.attempts - 1, 0)
        row.owner = nil
        row.leaseUntil = nil
        rows[key] = row
        return true
    }
}

/// A handler running in a model process.
struct ModelHandler {
    enum Behavior: CaseIterable {
        case returns, `throws`, hangs, ignoresCancellation
    }

    var token: String
    var sequence: Int64
    var handler: String
    var behavior: Behavior
    /// When it started (true time).
    var startedAt: Int64
    /// When it ends by itself (true time), unless it hangs.
    var endsAt: Int64
    var isCancelled = false
    /// When it times out (true time).
    var timeoutAt: Int64
}

/// A store call in flight.
struct ModelCall {
    enum Kind {
        case claim([Machine.QueuedClaim], token: String, reading: Int64)
        case sweep(limit: Int, token: String, excluding: [String], skipping: [String], reading: Int64)
        case finish(StoredKey, token: String, sequence: Int64, outcome: DurableTimerOutcome)
        case release(StoredKey, token: String, sequence: Int64, readyAt: Int64)
        case renew([Machine.HeldClaim], reading: Int64)
    }

    var process: Int
    var kind: Kind
    /// When it was sent (true time).
    var sentAt: Int64
    /// When the store applies it (true time).
    var at: Int64
    /// Whether it fails: not applied, or (`isApplied`) applied with its answer lost.
    var fails: Bool
    var isApplied: Bool
}

/// An answer waiting for its process (which may be frozen).
enum ModelAnswer {
    case claimed([Machine.QueuedClaim], token: String, results: [StoredKey: Machine.ClaimResult], failed: Bool, sentAt: Int64)
    case swept(limit: Int, token: String, Result<[DurableTimerRecord], DurableTimerError>, sentAt: Int64)
    case wrote(StoredKey, token: String, Machine.WriteResult)
    case renewed([Machine.HeldClaim], Result<Set<StoredKey>, DurableTimerError>)
}

/// A process of the model: a state machine and what its runner holds.
final class ModelProcess {
    enum Timer: Equatable {
        case renewal
        case retryFinish(StoredKey, token: String)
        case refill
        case graceExpired
        case sweepTick
        case backlogCheck
        case leaseCheck(Int64)
    }

    struct WakeUp {
        var at: Int64
        var generation: UInt64
    }

    struct Scheduled {
        var at: Int64
        var timer: Timer
    }

    let id: Int
    let owner: String
    var machine: Machine
    /// Its clock's error: its readings are true time plus this.
    var skew: Int64 = 0
    var isAlive = true
    var frozenUntil: Int64 = .min
    var failingUntil: Int64 = .min
    /// Until when its writes of runs' ends are slow (a lock, a trigger): not a fault, the calls
    /// land, seconds late; renewals are not slowed.
    var slowWritesUntil: Int64 = .min
    /// Armed wake-ups, at its own clock's readings.
    var wakeUps: [StoredKey: WakeUp] = [:]
    /// Arms and disarms not carried out yet: the runner carries out actions outside its lock, so a
    /// later transition's may go first.
    var deferredWakeUps: [Machine.Action] = []
    /// Timers on a monotonic clock (true time).
    var timers: [Scheduled] = []
    var handlers: [StoredKey: ModelHandler] = [:]
    var answers: [ModelAnswer] = []
    var isShuttingDown = false
    /// Shutdown returned before everything was written back (its grace period ended): from then
    /// on the process counts as gone, as a real one exits.
    var hasExited = false
    /// Times it was faulty: frozen, its store calls failing, dead or exited (true time).
    var faults: [ClosedRange<Int64>] = []

    init(id: Int) {
        self.id = id
        owner = "p\(id)"
        machine = Machine(configuration: ModelSettings.configuration(owner))
        _ = machine.register("h")
        _ = machine.register(ModelSettings.limitedHandler, policy: ModelSettings.limitedPolicy)
    }

    func reading(_ now: Int64) -> Int64 { now + skew }
    func isFrozen(_ now: Int64) -> Bool { now < frozenUntil }

    /// Whether the process was faulty at any time in `range` (a crash or an exit is a fault from
    /// then on; a clean shutdown is none).
    func wasFaulty(during range: ClosedRange<Int64>) -> Bool {
        faults.contains { $0.overlaps(range) }
    }
}
