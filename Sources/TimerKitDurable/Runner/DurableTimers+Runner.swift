import Dispatch
import Foundation
import TimerKit

extension DurableTimers {
    /// The effectful half of a runner: it keeps a ``RunnerStateMachine`` under one lock, feeds it
    /// what happens — wake-ups, claims, handler ends, writes, renewals — and carries out the
    /// actions each transition returns, outside the lock: wake-ups armed in TimerKit's engine,
    /// store calls, handler tasks started and cancelled.
    ///
    /// Where work runs: handlers on the clock's task executor (the global one for the wall clock);
    /// the runner's claims, completions and refills on the SQLite store's queue (where its calls
    /// run anyway), or on the global executor beside a store whose calls suspend (PostgreSQL);
    /// renewals on a queue of their own, so that handlers that hog the cooperative pool cannot
    /// delay a renewal past the lease. On a virtual clock everything runs on the clock's executor,
    /// whose quiescence an `advance` waits for, so that tests are exact.
    final class Runner: Sendable {
        typealias Handler = @Sendable (Data, DurableFire) async throws -> Void

        /// A stored payload that does not decode as the registered handler's type.
        struct PayloadDecodingFailed: Error {
            let reason: String
        }

        struct Registered: Sendable {
            var handler: Handler
            /// How long a run may take before its task is cancelled; `nil` for no limit.
            var timeout: Duration?
            /// Its own retry policy, concurrency limit and lease (each `nil`: the runner's).
            var policy: RunnerStateMachine.HandlerPolicy
        }

        /// What the runner works with: where timers are kept, whose they are, which clock.
        struct Context: Sendable {
            let store: any DurableTimerStore
            let namespace: String
            let clock: TimerClock
            let options: Options
            /// Where the runner's own work runs: the SQLite store's queue, a virtual clock's
            /// executor, or (`nil`) the global one (see ``Runner``).
            let controlExecutor: (any TaskExecutor)?
            /// Where renewals run: a queue of their own (a virtual clock's executor in tests), so
            /// that handlers hogging the cooperative pool cannot delay one past the lease.
            let renewalExecutor: any TaskExecutor

            /// The durable clock's reading (the store's time), in nanoseconds since 1970.
            func now() -> Int64 { clock.now.nanoseconds.addingSaturating(store.hostSkew).addingSaturating(store.clockOffset) }

            /// A monotonic reading, in nanoseconds: the continuous clock's (a virtual clock's in
            /// tests), for spans that a step of the wall clock must not distort.
            func monotonicNow() -> Int64 { monotonicClock.now.nanoseconds }

            /// The continuous clock, or a virtual clock itself.
            var monotonicClock: TimerClock { clock.kind == .virtual ? clock : .continuous }

            /// The instant on the runner's clock at which the store's clock reads `storeTime`.
            func hostInstant(_ storeTime: Int64) -> TimerInstant {
                TimerInstant(kind: clock.kind, nanoseconds: storeTime.addingSaturating(-store.clockOffset.clamped).addingSaturating(-store.hostSkew.clamped))
            }
        }

        /// A handler's task, with its claim's token and its timeout.
        struct RunHandle {
            var token: String
            var task: Task<Void, Never>
            var timeout: ScheduledCallback?
        }

        /// The shell's effect handles: what it armed, started, holds or waits on — never a
        /// decision, which is the machine's.
        struct Handles {
            var handlers: [String: Registered] = [:]
            /// The wake-ups armed in the engine, by key, with the generation each was armed for; an
            /// entry goes when its wake-up fires, is disarmed or is replaced.
            var wakeUps: [StoredKey: (generation: UInt64, callback: ScheduledCallback)] = [:]
            /// The runs whose handlers run here.
            var runs: [StoredKey: RunHandle] = [:]
            var refill: ScheduledCallback?
            /// The requests for a load of the horizon that came while one ran: the next load
            /// serves them (see ``Runner/refill()``).
            var loadWaiters: [CheckedContinuation<Bool, Never>] = []
            var renewal: ScheduledCallback?
            var follower: Task<Void, Never>?
            /// Follows the store's clock offset (see ``Runner/follow(offsets:)``).
            var offsetFollower: Task<Void, Never>?
            /// The next heartbeat, whether one began, and its write (see ``Runner/startHeartbeat()``).
            var heartbeat: ScheduledCallback?
            var hasBeaten = false
            var heartbeatWrite = HeartbeatWrite.idle
            /// Shutdowns waiting for the machine to drain (or their grace period to end).
            var drainWaiters: [CheckedContinuation<Void, Never>] = []
            /// `run()` calls waiting for a shutdown to begin.
            var stopWaiters: [CheckedContinuation<Void, Never>] = []
            /// One-shots' ends waiting for the next deletion round, and whether one is under way.
            var deletions: [(key: StoredKey, completion: DurableCompletion)] = []
            var isDeleting = false
        }

        /// What tests look at, and nothing else does: counts of the runner's own work.
        struct Probes {
            /// How many times the horizon was loaded (reloads coalesce).
            var horizonLoads = 0
            /// How many times a move of the store's clock offset re-armed the future wake-ups.
            var rearmings = 0
            /// Heartbeat writes under way, and the most there ever were at once.
            var heartbeatWrites = 0
            var mostHeartbeatWrites = 0
        }

        /// The machine and the handles behind one lock. Only this file touches it: every change
        /// of the machine is a ``transition(_:)`` or a ``decide(_:)``.
        private struct State {
            var machine: RunnerStateMachine
            var handles = Handles()
            var probes = Probes()
        }

        private let state: Locked<State>
        let context: Context
        /// Rows read from the store per query while loading the horizon.
        static let pageSize = 5_000

        /// This runner's id: its claims' tokens are `owner/n`.
        let owner: String

        init(context: Context, owner: String) {
            self.context = context
            self.owner = owner
            let options = context.options
            let catchUp = RunnerStateMachine.Configuration.catchUp(rate: options.catchUpRate)
            let configuration = RunnerStateMachine.Configuration(
                owner: owner, maxConcurrentHandlers: options.maxConcurrentHandlers, maxAttempts: options.maxAttempts,
                lease: options.lease.saturatingNanoseconds, retryDelay: options.retryDelay.saturatingNanoseconds,
                maxRetryDelay: options.maxRetryDelay.saturatingNanoseconds, grace: options.grace.saturatingNanoseconds, sweepTick: catchUp.tick,
                sweepCreditPerTick: catchUp.credit)
            state = Locked(State(machine: RunnerStateMachine(configuration: configuration)))
        }

        // MARK: Transitions

        /// Runs a transition under the lock, then carries out its actions outside it.
        func transition(_ body: (inout RunnerStateMachine) -> [RunnerStateMachine.Action]) {
            perform(state.withLock { body(&$0.machine) })
        }

        /// Runs a transition that answers its caller too, with the handles beside the machine
        /// under the same lock (a waiter is kept exactly when the machine says it waits); carries
        /// out its actions outside the lock.
        func decide<Answer>(_ body: (inout RunnerStateMachine, inout Handles) -> (Answer, [RunnerStateMachine.Action])) -> Answer {
            let (answer, actions) = state.withLock { body(&$0.machine, &$0.handles) }
            perform(actions)
            return answer
        }

        /// Reads the machine under the lock.
        func read<Value>(_ body: (RunnerStateMachine) -> Value) -> Value {
            state.withLock { body($0.machine) }
        }

        /// Changes the handles alone under the lock, reading the machine.
        func withHandles<Value>(_ body: (RunnerStateMachine, inout Handles) -> Value) -> Value {
            state.withLock { body($0.machine, &$0.handles) }
        }

        /// Changes what tests look at.
        func probe(_ body: (inout Probes) -> Void) {
            state.withLock { body(&$0.probes) }
        }

        func perform(_ actions: [RunnerStateMachine.Action]) {
            for action in actions {
                switch action {
                case .arm(let key, let instant, let generation): armWakeUp(key, at: instant, generation: generation)
                case .disarm(let key, let generation):
                    withHandles { _, handles -> ScheduledCallback? in
                        // Only the wake-up of that generation: a newer one armed meanwhile stays.
                        guard let armed = handles.wakeUps[key], armed.generation <= generation else { return nil }
                        return handles.wakeUps.removeValue(forKey: key)?.callback
                    }?.cancel()
                case .claim, .sweep: spawn { await self.claimRounds(action) }
                case .scheduleSweepTick(let delay):
                    schedule(after: delay) { runner in runner.transition { $0.sweepTickDue() } }
                case .scheduleBacklogCheck(let delay):
                    schedule(after: delay) { runner in runner.transition { $0.backlogMayWait() } }
                case .scheduleLeaseCheck(let instant):
                    _ = schedule(at: instant) { runner in runner.transition { $0.leaseCheckDue(at: instant) } }
                case .start(let key, let start): startRun(key, start)
                case .finish(let key, let token, let sequence, let outcome, let run): finish(key, token: token, sequence: sequence, outcome: outcome, run: run)
                case .retryFinish(let key, let token, let delay):
                    schedule(after: delay) { runner in runner.transition { $0.retryFinishDue(key, token: token) } }
                case .release(let key, let token, let sequence, let readyAt):
                    spawn { await self.release(key, token: token, sequence: sequence, readyAt: readyAt) }
                case .cancelHandler(let key, let token):
                    withHandles { $1.runs[key].flatMap { $0.token == token ? $0.task : nil } }?.cancel()
                case .renew(let claims): spawn(on: context.renewalExecutor) { await self.renew(claims) }
                case .scheduleRenewal(let delay):
                    let callback = schedule(after: delay, on: context.renewalExecutor) { runner in
                        runner.transition { $0.renewalDue(now: runner.context.now()) }
                    }
                    withHandles { $1.renewal = callback }
                case .report(let error): context.options.onError(error)
                case .event(let event): context.options.onEvent(event)
                case .drained: drained()
                }
            }
        }

        // MARK: Handlers and lifecycle

        func register(_ name: String, _ registered: Registered) throws(DurableTimerError) {
            let isNew = decide { machine, handles in
                guard machine.register(name, policy: registered.policy) else { return (false, []) }
                handles.handlers[name] = registered
                return (true, [])
            }
            guard isNew else { throw .handlerAlreadyRegistered(name) }
        }

        func handler(_ name: String) -> Registered? { withHandles { $1.handlers[name] } }

        var handlerNames: [String] { withHandles { Array($1.handlers.keys).sorted() } }

        var isStarted: Bool { read { $0.lifecycle == .running } }

        /// How many times the horizon was loaded, and whether a load is under way.
        package var horizonLoads: (count: Int, loading: Bool) { state.withLock { ($0.probes.horizonLoads, $0.machine.loads.horizon != .idle) } }

        /// Wake-ups held (armed, not yet fired), and the machine's occurrences (tests: nothing is
        /// kept for a timer that has run).
        package var retained: (wakeUps: Int, occurrences: Int) { state.withLock { ($0.handles.wakeUps.count, $0.machine.occurrences.count) } }

        /// How many times a move of the store's clock offset re-armed the future wake-ups.
        package var rearmings: Int { state.withLock { $0.probes.rearmings } }

        /// The most heartbeat writes that were ever under way at once.
        package var mostHeartbeatWrites: Int { state.withLock { $0.probes.mostHeartbeatWrites } }

        func isRunning(_ key: String) -> Bool { read { $0.isRunning(StoredKey(key)) } }

        var waitingRuns: Int { read { $0.waitingCount } }

        var runningHandlers: Int { read { $0.runningCount } }

        /// Marks the runner started; `false` if it was already, or has stopped.
        func markStarted() -> Bool { decide { machine, _ in (machine.start(), []) } }

        /// Begins shutting down: nothing new is armed or claimed; the refill and the store's change
        /// feed stop. Runs under way go on (see ``shutdown(gracePeriod:)``). Idempotent.
        func stop() {
            let (cancelled, waiters) = decide { machine, handles in
                let actions = machine.stop()
                handles.follower?.cancel()
                handles.follower = nil
                handles.offsetFollower?.cancel()
                handles.offsetFollower = nil
                let cancelled = [handles.refill, handles.heartbeat].compactMap { $0 }
                handles.refill = nil
                handles.heartbeat = nil
                defer { handles.stopWaiters = [] }
                return ((cancelled, handles.stopWaiters), actions)
            }
            for callback in cancelled { callback.cancel() }
            for waiter in waiters { waiter.resume() }
        }

        /// Stops, then waits until everything this runner holds is written back — or until
        /// `gracePeriod` has passed on its clock: then the runs still under way are cancelled (each
        /// gives its claim back when its handler ends by throwing), and it returns.
        func shutdown(gracePeriod: Duration) async {
            stop()
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isDrained = withHandles { machine, handles -> Bool in
                    if machine.lifecycle == .stopped { return true }
                    handles.drainWaiters.append(continuation)
                    return false
                }
                if isDrained {
                    continuation.resume()
                    return
                }
                let grace = try? context.clock.schedule(at: .after(max(gracePeriod, .zero))) { [weak self] in
                    guard let self else { return }
                    self.transition { $0.graceExpired() }
                    self.drained()
                }
                // The clock has shut down: nothing can wait on it.
                if grace == nil { drained() }
            }
        }

        /// Wakes every shutdown waiting for the runner to drain.
        private func drained() {
            let waiters = withHandles { _, handles in
                defer { handles.drainWaiters = [] }
                return handles.drainWaiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Returns once a shutdown has begun.
        func waitUntilStopped() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stopped = withHandles { machine, handles -> Bool in
                    if machine.lifecycle == .stopping || machine.lifecycle == .stopped { return true }
                    handles.stopWaiters.append(continuation)
                    return false
                }
                if stopped { continuation.resume() }
            }
        }

        /// Waits until the store is open (``DurableTimerStore/untilOpen()``): `true` then; `false`
        /// if the runner stops or the calling task is cancelled first.
        func untilStoreOpens() async -> Bool {
            let store = context.store
            let once = Locked<CheckedContinuation<Bool, Never>?>(nil)
            let waits = Locked<[Task<Void, Never>]>([])
            let opened = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    once.withLock { $0 = continuation }
                    waits.withLock {
                        $0 = [
                            Task {
                                await store.untilOpen()
                                once.withLock { $0.take() }?.resume(returning: true)
                            },
                            Task { [weak self] in
                                await self?.waitUntilStopped()
                                once.withLock { $0.take() }?.resume(returning: false)
                            }
                        ]
                    }
                    if Task.isCancelled { once.withLock { $0.take() }?.resume(returning: false) }
                }
            } onCancel: {
                once.withLock { $0.take() }?.resume(returning: false)
            }
            for wait in waits.withLock({ $0 }) { wait.cancel() }
            return opened
        }

        // MARK: Plumbing

        /// Arms a wake-up for `key` at the store-time instant `instant`, unless the machine has
        /// moved on from that generation meanwhile.
        func armWakeUp(_ key: StoredKey, at instant: Int64, generation: UInt64) {
            guard
                let callback = try? context.clock.schedule(
                    at: .at(context.hostInstant(instant)),
                    { [weak self] in self?.wokeUp(key, generation: generation) })
            else { return }  // the clock shut down
            let replaced = withHandles { machine, handles -> ScheduledCallback? in
                guard case .armed(_, generation)? = machine.occurrences[key]?.phase else { return callback }
                defer { handles.wakeUps[key] = (generation, callback) }
                return handles.wakeUps[key]?.callback
            }
            replaced?.cancel()
        }

        /// A wake-up fired: forgets it (a runner that fires a million one-shots must not keep a
        /// million spent callbacks) and tells the machine.
        private func wokeUp(_ key: StoredKey, generation: UInt64) {
            decide { machine, handles in
                if handles.wakeUps[key]?.generation == generation { handles.wakeUps[key] = nil }
                return ((), machine.wokeUp(key, generation: generation))
            }
        }

        /// Runs `body` on the runner's executor at the store-time instant `instant`, unless the
        /// clock has shut down.
        @discardableResult
        func schedule(at instant: Int64, _ body: @escaping @Sendable (Runner) -> Void) -> ScheduledCallback? {
            try? context.clock.schedule(at: .at(context.hostInstant(instant))) { [weak self] in
                guard let self else { return }
                self.spawn { body(self) }
            }
        }

        /// Runs `body` on the runner's executor `delay` nanoseconds from now on a monotonic clock
        /// (the continuous one; a virtual clock in tests), unless the clock has shut down.
        @discardableResult
        func schedule(after delay: Int64, on executor: (any TaskExecutor)? = nil, _ body: @escaping @Sendable (Runner) -> Void) -> ScheduledCallback? {
            try? context.monotonicClock.schedule(at: .after(.nanoseconds(max(delay, 0)))) { [weak self] in
                guard let self else { return }
                self.spawn(on: executor ?? self.context.controlExecutor) { body(self) }
            }
        }

        /// Runs `body` in a task on the runner's own executor (or `executor`).
        func spawn(_ body: @escaping @Sendable () async -> Void) {
            spawn(on: context.controlExecutor, body)
        }

        /// A task of the runner's is never part of an application's transaction, whatever task
        /// started it (task-locals are inherited).
        func spawn(on executor: (any TaskExecutor)?, _ body: @escaping @Sendable () async -> Void) {
            Task(executorPreference: executor) { await DurableTransactionScope.outside { await body() } }
        }
    }
}

extension Int64 {
    /// `self` with `Int64.min` read as `-Int64.max`, so that it can be negated.
    fileprivate var clamped: Int64 { self == .min ? -.max : self }
}
