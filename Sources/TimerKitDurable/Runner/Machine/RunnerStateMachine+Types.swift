import Foundation
import TimerKit

// The values the runner's state machine keeps and returns: an occurrence's phases, its run and
// completion, and the actions the runner carries out.

extension RunnerStateMachine {
    /// What the machine needs of ``DurableTimers/Options``, in nanoseconds.
    struct Configuration: Sendable, Equatable {
        /// This runner's id: a claim's token is `owner/number`.
        var owner: String
        var maxConcurrentHandlers: Int
        var maxAttempts: Int
        var lease: Int64
        var retryDelay: Int64
        var maxRetryDelay: Int64
        /// The lateness that still counts as on time for ``MisfirePolicy/skip``.
        var grace: Int64
        /// How often the sweep of a backlog earns credit, and how much (``catchUp(rate:)``).
        var sweepTick: Int64 = 10_000_000
        var sweepCreditPerTick = 1 << 40

        /// The sweep's tick and credit for `rate` overdue timers claimed a second: a tick every
        /// 10 ms (slower rates: one claim a tick), each worth a tick's share of the rate. No rate:
        /// a credit no sweep uses up.
        static func catchUp(rate: Int?) -> (tick: Int64, credit: Int) {
            guard let rate else { return (10_000_000, 1 << 40) }
            let tick = max(10_000_000, 1_000_000_000 / Int64(max(rate, 1)))
            let credit = Double(max(rate, 1)) * Double(tick) / 1e9
            return (tick, Int(min(max(credit.rounded(), 1), Double(1 << 40))))
        }
    }

    /// What a handler registered with of its own (``DurableTimers/register(_:payload:timeout:retry:maxConcurrentRuns:lease:_:)``);
    /// each `nil` takes the runner's.
    struct HandlerPolicy: Sendable, Equatable {
        var retry: Retry?
        /// At most this many of its runs at once in this process.
        var maxConcurrentRuns: Int?
        /// Its claims' lease, in nanoseconds.
        var lease: Int64?
    }

    /// Keys in order, taken from the front: an array and the index of its head, compacted as the
    /// head moves on.
    struct KeyQueue: Sendable, Equatable {
        private var keys: [StoredKey] = []
        private var head = 0

        var isEmpty: Bool { head == keys.count }

        /// The keys not taken yet.
        var remaining: ArraySlice<StoredKey> { keys[head...] }

        mutating func append(_ key: StoredKey) { keys.append(key) }

        mutating func popFirst() -> StoredKey? {
            guard head < keys.count else { return nil }
            let key = keys[head]
            head += 1
            if head == keys.count {
                keys.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 4_096, head * 2 > keys.count {
                keys.removeFirst(head)
                head = 0
            }
            return key
        }
    }

    /// A handler's retry policy, in nanoseconds (``DurableRetryPolicy``).
    struct Retry: Sendable, Equatable {
        var maxAttempts: Int
        var delay: Int64
        var maxDelay: Int64
        /// The jitter, in thousandths of the wait.
        var jitterPermille: Int64

        /// The wait after the failure of attempt `attempts`: doubling from ``delay`` up to
        /// ``maxDelay``, spread by the jitter — the same for the same key and attempt anywhere.
        func delay(after attempts: Int, key: StoredKey) -> Int64 {
            let shift = Int64(min(max(attempts - 1, 0), 40))
            let wait = min(delay.multipliedSaturating(by: 1 << shift), maxDelay)
            guard jitterPermille > 0 else { return wait }
            // FNV-1a of the key and the attempt, then a SplitMix step: a fraction in [-1, 1).
            let hash = StableHash.mix(StableHash.fnv1a(key.string.utf8) ^ UInt64(truncatingIfNeeded: attempts) &* StableHash.golden)
            let fraction = Double(hash >> 11) / Double(1 << 52) - 1
            let spread = Double(wait) * Double(jitterPermille) / 1000 * fraction
            return max(0, wait.addingSaturating(Int64(spread.rounded())))
        }
    }

    /// Where the runner as a whole stands.
    enum Lifecycle: Sendable, Equatable {
        /// Made, not started: nothing is loaded or armed.
        case idle
        /// Loading, arming, claiming and running.
        case running
        /// Shutting down: nothing new is armed or claimed; claims in flight are given back, runs
        /// under way finish (or are cancelled when the grace period ends).
        case stopping
        /// Shut down, and nothing is held any more.
        case stopped
    }

    /// Why a run's task was cancelled.
    enum Cancellation: Sendable, Equatable {
        /// The timer was removed (``DurableTimers/cancel(key:)``, here or on another instance) or
        /// replaced: its occurrence no longer exists, and nothing is written when the run ends.
        case removed
        /// The claim's lease passed without a renewal, or another runner holds the occurrence now.
        case leaseLost
        /// The handler outlived its timeout; the run counts as a failed attempt.
        case timedOut(String)
        /// The runner's shutdown grace period ended; the claim is given back.
        case shutdown
    }

    /// A claimed occurrence whose handler runs (or ran) in this process.
    struct Run: Sendable, Equatable {
        /// The claim's token, as stored in the row's owner column: the fence of every write.
        var token: String
        var sequence: Int64
        var handler: String
        /// The attempt this claim is (attempts as the claim stored them).
        var attempt: Int
        /// Until when the store holds the claim for us, as last written (store time).
        var leaseUntil: Int64
        /// Whether ``DurableTimers/fire(key:)`` asked for it (claimed early).
        var isManual: Bool
        /// The occurrence's grid deadline, where a manual claim given back is ready again.
        var due: Int64
        /// Where the timer goes when the handler returns.
        var next: DurableTimerOutcome
        /// Why its task was cancelled, if it was.
        var cancellation: Cancellation?
        /// When its handler was started (the claim's time; store time): the history's start.
        var startedAt: Int64 = 0
    }

    /// The end of a run being written.
    struct Completion: Sendable, Equatable {
        var outcome: DurableTimerOutcome
        /// The run to record in the history with it, if the handler ran (or the claim parked it).
        var run: DurableTimerRun?
        /// Failed attempts to write it (each retried: the write is fenced, so idempotent).
        var failures = 0
        /// A renewal found the claim gone while the completion was pending.
        var renewalRefused = false
    }

    /// An occurrence's phase in this process.
    enum Phase: Sendable, Equatable {
        /// A wake-up is armed in the engine for `readyAt` (the generation tells a stale wake-up).
        case armed(readyAt: Int64, generation: UInt64)
        /// Woken (or asked for by a manual fire), waiting for a claim round and a handler slot.
        case queued(isManual: Bool)
        /// In the claim round `token`.
        case claiming(token: String, isManual: Bool)
        /// Claimed; its handler runs.
        case running(Run)
        /// The handler ended; its outcome is being written.
        case completing(Run, Completion)
        /// The claim is being given back (shutdown, a handler not registered here, a removal),
        /// ready again at `readyAt`; `failures` failed tries so far (each retried, as a
        /// completion is).
        case releasing(Run, readyAt: Int64, failures: Int)

        /// The token of the claim the phase holds or is taking, if any.
        var token: String? {
            switch self {
            case .armed, .queued: nil
            case .claiming(let token, _): token
            case .running(let run), .completing(let run, _), .releasing(let run, _, _): run.token
            }
        }
    }

    /// One key's state in this process: there is at most one per key, so no key is ever claimed
    /// twice here at once.
    struct Occurrence: Sendable, Equatable {
        var phase: Phase
        /// A ready time learned while the key was busy (claiming, running, completing): armed once
        /// it is free, unless the store says otherwise.
        var deferredReadyAt: Int64?
        /// The timer was removed while the key was busy.
        var isRemoved = false
        /// Claims in a row that the store refused although the key was ready by this runner's
        /// clock (another claim was writing the row, or the clocks disagree): each waits twice
        /// as long before the next, from 5 ms up to 1.28 s.
        var refusals = 0
        /// Its timer's handler, when the store said (a load, a claim).
        var handler: String?
        /// The handler with a concurrency limit whose slot it holds (claiming or running).
        var slotHandler: String?
        /// Given back for want of a slot of its handler: it waits here for one once the release
        /// is written.
        var waitsForSlot = false

        init(phase: Phase, handler: String? = nil) {
            self.phase = phase
            self.handler = handler
        }
    }

    /// A claim a sweep took of a key whose handler runs here, being given back.
    struct Stray: Sendable, Equatable {
        var key: StoredKey
        var token: String
        var sequence: Int64
        var readyAt: Int64
        var failures = 0
    }

    /// A key in a claim round.
    struct QueuedClaim: Sendable, Equatable {
        var key: StoredKey
        var isManual: Bool
        /// The lease to claim it for: its handler's, when known, or the runner's.
        var lease: Int64
    }

    /// A held claim, for a renewal.
    struct HeldClaim: Sendable, Equatable {
        var key: StoredKey
        var token: String
        var sequence: Int64
        /// The lease's new end: from the renewal's time, its handler's lease on.
        var leaseUntil: Int64
    }

    /// What the store said of one key of a claim round.
    enum ClaimResult: Sendable, Equatable {
        case claimed(DurableTimerRecord)
        /// Not ready (not due, or held by a live lease): it may next be claimed at `readyAt`.
        case notReady(readyAt: Int64)
        /// Held by another claim (another runner's) until `until`, its lease's end.
        case heldElsewhere(until: Int64)
        /// No timer under the key, or it is parked.
        case gone
        /// The store call failed (its error is reported once for the round).
        case failed
    }

    /// How a handler ended.
    enum HandlerResult: Sendable, Equatable {
        case returned
        /// It threw (the error's description).
        case threw(String)
        /// The payload did not decode as the registered type; the handler did not run.
        case undecodable(String)
    }

    /// What a write of a run's end (or a release) did.
    enum WriteResult: Sendable, Equatable {
        /// It changed the row: the claim was still ours.
        case applied
        /// It changed nothing: the claim was no longer ours (or the write had landed already).
        case refused
        case failed(DurableTimerError)
    }

    /// What to start: a claimed occurrence's handler.
    struct Start: Sendable, Equatable {
        var record: DurableTimerRecord
        var plan: OccurrencePlan
        var token: String
        /// When it was claimed (store time): the fire's ``DurableFire/firedAt``.
        var claimedAt: Int64
    }

    /// What the runner carries out after a transition, outside its lock, in order.
    enum Action: Sendable, Equatable {
        /// Arm a wake-up for the key at `at` (store time), replacing the key's armed one.
        case arm(StoredKey, at: Int64, generation: UInt64)
        /// Cancel the key's wake-up armed for `generation`, if it is still the one armed. Actions
        /// run outside the lock, so another transition's later arm of the key may have been carried
        /// out first: that newer wake-up stays.
        case disarm(StoredKey, generation: UInt64)
        /// Claim these keys, as the round `token` (manual ones early, one by one).
        case claim([QueuedClaim], token: String)
        /// Claim up to `limit` of the store's ready timers no runner holds, the earliest first, as
        /// the round `token`, for the runner's lease: a sweep of the backlog. Rows owned by
        /// `excluding` (claims this runner holds, whose lease may have lapsed) are not taken, nor
        /// those of the handlers `skipping` (their slots are all taken).
        case sweep(limit: Int, token: String, excluding: [String], skipping: [String])
        /// Call ``RunnerStateMachine/sweepTickDue()`` `after` nanoseconds: the catch-up's credit.
        case scheduleSweepTick(after: Int64)
        /// Call ``RunnerStateMachine/backlogMayWait()`` again `after` nanoseconds: claims that a
        /// sweep saw taken by other runners may lapse (their process died) and be ready again.
        case scheduleBacklogCheck(after: Int64)
        /// Call ``RunnerStateMachine/leaseCheckDue(at:)`` at `at` (store time): claims other
        /// runners held when this one tried their keys end by then, or lapse.
        case scheduleLeaseCheck(at: Int64)
        /// Run a claimed occurrence's handler.
        case start(StoredKey, Start)
        /// Write a run's end, fenced by its token and sequence.
        case finish(StoredKey, token: String, sequence: Int64, outcome: DurableTimerOutcome, run: DurableTimerRun?)
        /// Write a run's end (or its release) again `after` nanoseconds: the last write failed.
        case retryFinish(StoredKey, token: String, after: Int64)
        /// Give a claim back without using up its attempt, ready again at `readyAt`.
        case release(StoredKey, token: String, sequence: Int64, readyAt: Int64)
        /// Cancel the task running the key's handler.
        case cancelHandler(StoredKey, token: String)
        /// Extend held claims' leases, each to its `leaseUntil`, in one write (one per lease).
        case renew([HeldClaim])
        /// Arm the next renewal tick `after` nanoseconds (a span: on a monotonic clock, so that a
        /// step of the wall clock cannot delay a renewal past the lease).
        case scheduleRenewal(after: Int64)
        case report(DurableTimerError)
        case event(DurableTimerEvent)
        /// The runner is stopping and holds nothing any more: shutdown can return.
        case drained
    }
}

extension RunnerStateMachine.Run {
    /// The run as the history records it: ended as `outcome` says, on the instance whose claim
    /// token this is (`instance/n`).
    func entry(_ key: StoredKey, started: Int64, ended: Int64, outcome: DurableTimerOutcome) -> DurableTimerRun {
        let (result, error): (DurableTimerRun.Outcome, String?) =
            switch outcome {
            case .delete, .advance: (.succeeded, nil)
            case .retry(_, let error): (.failed, error)
            case .park(let error): (.parked, error)
            }
        let instance = token.lastIndex(of: "/").map { String(token[..<$0]) } ?? token
        return DurableTimerRun(
            key: key.string, handler: handler, sequence: sequence, attempt: attempt, due: due, started: started, ended: ended, outcome: result,
            instance: instance, error: error)
    }
}
