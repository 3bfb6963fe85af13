import Dispatch
import Foundation
import TimerKit

extension DurableTimers {
    /// The in-memory half of a runner: the handlers, the timers armed in TimerKit's engine (those
    /// due within the horizon), the runs under way and the slots they take.
    ///
    /// Decisions are made under one lock (``State``); callbacks are scheduled and cancelled, store
    /// calls made and handlers run outside it. The store holds the truth: a timer armed here is only
    /// a wake-up, and firing it starts with a claim in the store, which decides whether it runs.
    final class Runner: Sendable {
        typealias Handler = @Sendable (Data, DurableFire) async throws -> Void

        /// A stored payload that does not decode as the registered handler's type.
        struct PayloadDecodingFailed: Error {
            let reason: String
        }

        struct Armed {
            var callback: ScheduledCallback
            /// The ready time it was armed for: a wake-up for an older ready time is stale.
            var readyAt: Int64
        }

        struct PendingCompletion {
            var completion: DurableCompletion
            var continuation: CheckedContinuation<Result<Bool, DurableTimerError>, Never>
        }

        struct State {
            var handlers: [String: Handler] = [:]
            var armed: [String: Armed] = [:]
            /// Timers ready by this instant are armed (or being run); later ones are loaded later.
            var loadedUntil: Int64 = .min
            var refill: ScheduledCallback?
            /// Runs under way in this process, by key.
            var running: [String: Int] = [:]
            var isStarted = false
            var isStopped = false
            /// Slots taken by runs (at most ``Options/maxConcurrentHandlers``) and the runs waiting
            /// for one.
            var slotsTaken = 0
            var slotWaiters: [CheckedContinuation<Void, Never>] = []
            /// Fire tasks started and not yet ended, and who waits for them to end.
            var tasks = 0
            var endWaiters: [CheckedContinuation<Void, Never>] = []
            var stopWaiters: [CheckedContinuation<Void, Never>] = []
            /// The task that follows the store's changes (PostgreSQL's notifications).
            var follower: Task<Void, Never>?
            /// Keys whose wake-up came and that wait for the next claim round, in order.
            var woken: [String] = []
            /// Whether a claim round is under way (wake-ups meanwhile join the next one).
            var isClaiming = false
            /// Manual fires waiting for a handler slot.
            var manualRunsWaiting = 0
            /// Completed one-shots waiting for the next completion round, and whether one is under way.
            var completions: [PendingCompletion] = []
            var isCompleting = false
        }

        let state = Locked(State())
        let options: Options
        /// The most timers a refill arms; past it, it arms again when the last one loaded comes due.
        static let maximumArmed = 1_000_000
        /// Rows read from the store per query while loading the horizon.
        static let pageSize = 5_000

        init(options: Options) {
            self.options = options
        }

        // MARK: Handlers and lifecycle

        func register(_ name: String, _ handler: @escaping Handler) throws(DurableTimerError) {
            try state.withLock { (state) throws(DurableTimerError) in
                guard state.handlers[name] == nil else { throw .handlerAlreadyRegistered(name) }
                state.handlers[name] = handler
            }
        }

        func handler(_ name: String) -> Handler? { state.withLock { $0.handlers[name] } }

        var handlerNames: [String] { state.withLock { Array($0.handlers.keys).sorted() } }

        var isStarted: Bool { state.withLock { $0.isStarted && !$0.isStopped } }

        func isRunning(_ key: String) -> Bool { state.withLock { $0.running[key] != nil } }

        /// Occurrences that came due here and wait for a claim round or a free handler slot (the
        /// woken keys, and manual fires waiting for a slot; a claim round waiting for a slot is its
        /// woken keys).
        var waitingRuns: Int { state.withLock { $0.woken.count + $0.manualRunsWaiting } }

        /// Handlers running in this process.
        var runningHandlers: Int { state.withLock { $0.running.values.reduce(0, +) } }

        /// Marks the runner started; `false` if it was already, or has stopped.
        func markStarted() -> Bool {
            state.withLock { state in
                guard !state.isStarted, !state.isStopped else { return false }
                state.isStarted = true
                return true
            }
        }

        /// Stops arming and firing; cancels every armed wake-up. Idempotent.
        func stop() {
            let (callbacks, waiters) = state.withLock { state -> ([ScheduledCallback], [CheckedContinuation<Void, Never>]) in
                guard !state.isStopped else { return ([], []) }
                state.isStopped = true
                state.follower?.cancel()
                state.follower = nil
                var callbacks = state.armed.values.map(\.callback)
                if let refill = state.refill { callbacks.append(refill) }
                state.armed = [:]
                state.refill = nil
                let waiters = state.stopWaiters + state.slotWaiters
                state.stopWaiters = []
                state.slotWaiters = []
                return (callbacks, waiters)
            }
            for callback in callbacks { callback.cancel() }
            for waiter in waiters { waiter.resume() }
        }

        func waitUntilStopped() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stopped = state.withLock { state -> Bool in
                    if state.isStopped { return true }
                    state.stopWaiters.append(continuation)
                    return false
                }
                if stopped { continuation.resume() }
            }
        }

        func waitForRunsToEnd() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.tasks == 0 { return true }
                    state.endWaiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }

        // MARK: Arming

        /// Arms a wake-up for `key` at `at` (for its ready time `readyAt`), replacing an older one.
        private func arm(_ key: String, readyAt: Int64, at: Int64, timers: DurableTimers) {
            let skip = state.withLock { state in state.isStopped || state.armed[key]?.readyAt == readyAt }
            guard !skip else { return }
            let instant = TimerInstant(
                kind: timers.clock.kind, nanoseconds: at.addingSaturating(-timers.store.clockOffset).addingSaturating(-timers.store.hostSkew))
            guard
                let callback = try? timers.clock.schedule(
                    at: .at(instant),
                    { [weak timers] in
                        timers?.runner.woke(key, readyAt: readyAt, timers: timers)
                    })
            else { return }  // the clock shut down
            let replaced = state.withLock { state -> ScheduledCallback? in
                guard !state.isStopped else { return callback }
                if let current = state.armed[key], current.readyAt == readyAt { return callback }
                let old = state.armed[key]?.callback
                state.armed[key] = Armed(callback: callback, readyAt: readyAt)
                return old
            }
            replaced?.cancel()
        }

        /// Arms a timer just written through this runner if it is ready within what is loaded.
        func armIfLoaded(_ record: DurableTimerRecord, timers: DurableTimers) {
            armIfLoaded(record.key, readyAt: record.readyAt, handler: record.handler, timers: timers)
        }

        /// Arms `key` if it is ready within what is loaded and its handler (when known) is registered.
        func armIfLoaded(_ key: String, readyAt: Int64, handler: String?, timers: DurableTimers) {
            let loaded = state.withLock { state in
                state.isStarted && !state.isStopped && readyAt <= state.loadedUntil && (handler.map { state.handlers[$0] != nil } ?? true)
            }
            if loaded { arm(key, readyAt: readyAt, at: readyAt, timers: timers) }
        }

        /// Cancels the wake-up armed for `key`, if any.
        func disarm(_ key: String) {
            state.withLock { $0.armed.removeValue(forKey: key) }?.callback.cancel()
        }

        /// Loads every timer ready within the horizon and arms it; overdue ones (after downtime) are
        /// spread over `count / catchUpRate` seconds, each at a fixed offset of its key. Then arms
        /// the next refill, halfway through the horizon.
        func refill(timers: DurableTimers) async {
            guard isStarted else { return }
            let now = timers.now()
            let until = now.addingSaturating(options.horizon.saturatingNanoseconds)
            var loaded: [DurableTimerRecord] = []
            var cursor: DurableTimerCursor?
            var truncated = false
            do {
                let names = handlerNames
                while true {
                    let page = try await timers.store.ready(namespace: timers.namespace, by: until, handlers: names, after: cursor, limit: Self.pageSize)
                    loaded += page
                    guard page.count == Self.pageSize, let last = page.last else { break }
                    cursor = DurableTimerCursor(readyAt: last.readyAt, key: last.key)
                    if loaded.count >= Self.maximumArmed {
                        truncated = true
                        break
                    }
                }
            } catch {
                options.onError(error)
                scheduleRefill(at: now.addingSaturating(options.retryDelay.saturatingNanoseconds), timers: timers)
                return
            }
            let overdue = loaded.lazy.filter { $0.readyAt < now }.count
            let spread = min(Int64(overdue) * 1_000_000_000 / Int64(options.catchUpRate), 60_000_000_000)
            let loadedUntil = truncated ? loaded.last!.readyAt : until
            state.withLock { $0.loadedUntil = max($0.loadedUntil, loadedUntil) }
            for record in loaded {
                let at = record.readyAt < now ? now + Self.offset(of: record.key, within: spread) : record.readyAt
                arm(record.key, readyAt: record.readyAt, at: at, timers: timers)
            }
            let half = now.addingSaturating(options.horizon.saturatingNanoseconds / 2)
            scheduleRefill(at: truncated ? max(loadedUntil, now + 1_000_000) : half, timers: timers)
        }

        private func scheduleRefill(at instant: Int64, timers: DurableTimers) {
            let callback = try? timers.clock.schedule(at: .at(TimerInstant(kind: timers.clock.kind, nanoseconds: instant))) { [weak timers] in
                guard let timers else { return }
                // Off the engine thread: a refill reads the store.
                timers.runner.spawn(timers: timers) { await timers.runner.refill(timers: timers) }
            }
            let old = state.withLock { state -> ScheduledCallback? in
                guard !state.isStopped else { return callback }
                defer { state.refill = callback }
                return state.refill
            }
            old?.cancel()
        }

        /// A fixed offset in `[0, spread)` for a key (FNV-1a), so that a catch-up is spread the same
        /// way each time it is loaded.
        static func offset(of key: String, within spread: Int64) -> Int64 {
            guard spread > 0 else { return 0 }
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in key.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            return Int64(hash % UInt64(spread))
        }

        // MARK: Firing

        /// A wake-up armed for `key` came (on the engine thread): starts its run in a task.
        private func woke(_ key: String, readyAt: Int64, timers: DurableTimers?) {
            guard let timers else { return }
            let startRound = state.withLock { state -> Bool in
                if state.armed[key]?.readyAt == readyAt { state.armed[key] = nil }
                guard !state.isStopped else { return false }
                state.woken.append(key)
                guard !state.isClaiming else { return false }
                state.isClaiming = true
                return true
            }
            if startRound { spawn(timers: timers) { await self.claimRounds(timers: timers) } }
        }

        /// Claims the woken keys in rounds, one store call each: the keys that came due while a
        /// round was under way are claimed together in the next, as many as there are free slots.
        /// Under load a round carries many keys; at rest, one.
        private func claimRounds(timers: DurableTimers) async {
            while true {
                let waiting = state.withLock { state -> Bool in
                    if state.woken.isEmpty || state.isStopped {
                        state.isClaiming = false
                        return false
                    }
                    return true
                }
                guard waiting, await takeSlot() else {
                    state.withLock { $0.isClaiming = false }
                    return
                }
                let keys = state.withLock { state -> [String] in
                    let extra = min(max(options.maxConcurrentHandlers - state.slotsTaken, 0), state.woken.count - 1)
                    state.slotsTaken += extra
                    let keys = Array(state.woken.prefix(1 + extra))
                    state.woken.removeFirst(keys.count)
                    return keys
                }
                await claim(keys, timers: timers)
            }
        }

        /// Claims `keys` (holding a slot for each) and starts a run of each claimed one; gives the
        /// other slots back and watches the keys that another runner holds.
        private func claim(_ keys: [String], timers: DurableTimers) async {
            let now = timers.now()
            let leaseUntil = now.addingSaturating(options.lease.saturatingNanoseconds)
            let result: DurableClaimBatch
            do {
                result = try await timers.store.claim(namespace: timers.namespace, keys: keys, owner: timers.owner, now: now, leaseUntil: leaseUntil)
            } catch {
                options.onError(error)
                for key in keys {
                    giveSlot()
                    // Try again after a while; the store holds the timer meanwhile.
                    arm(key, readyAt: now, at: now.addingSaturating(options.retryDelay.saturatingNanoseconds), timers: timers)
                }
                return
            }
            options.onEvent(.claimed(requested: keys.count, claimed: result.claimed.count))
            for _ in 0..<(keys.count - result.claimed.count) { giveSlot() }
            for (key, readyAt) in result.waiting {
                // Moved, or held by another runner's lease: watch it, so that it runs here if that
                // runner dies (its lease then expires). A row another claim is writing right now
                // reads as ready: look again shortly rather than at once.
                let loaded = state.withLock { readyAt <= $0.loadedUntil }
                if loaded { arm(key, readyAt: readyAt, at: max(readyAt, now.addingSaturating(5_000_000)), timers: timers) }
            }
            for record in result.claimed {
                spawn(timers: timers) {
                    await self.execute(record, manual: false, now: now, timers: timers)
                    self.giveSlot()
                }
            }
        }

        /// Starts a manual run of `key` (``DurableTimers/fire(key:)``) in a task, unless the runner
        /// has stopped.
        func startManualRun(_ key: String, timers: DurableTimers) {
            spawn(timers: timers) { await self.run(key, manual: true, timers: timers) }
        }

        /// Runs `body` in a task on the clock's executor, counted until it ends (``waitForRunsToEnd()``),
        /// unless the runner has stopped.
        func spawn(timers: DurableTimers, _ body: @escaping @Sendable () async -> Void) {
            let go = state.withLock { state -> Bool in
                guard !state.isStopped else { return false }
                state.tasks += 1
                return true
            }
            guard go else { return }
            Task(executorPreference: timers.clock.taskExecutor) {
                await body()
                self.taskEnded()
            }
        }

        /// Follows the store's changes, if it reports them: arms what other runners wrote within
        /// the horizon, disarms what they removed, and loads the horizon again when changes may
        /// have been missed.
        func follow(_ changes: AsyncStream<DurableTimerChange>, timers: DurableTimers) {
            let task = Task(executorPreference: timers.clock.taskExecutor) { [weak timers] in
                for await change in changes {
                    guard let timers else { return }
                    switch change {
                    case .ready(let key, let readyAt, let handler): timers.runner.armIfLoaded(key, readyAt: readyAt, handler: handler, timers: timers)
                    case .removed(let key): timers.runner.disarm(key)
                    case .reload: timers.runner.spawn(timers: timers) { await timers.runner.refill(timers: timers) }
                    }
                }
            }
            let old = state.withLock { state -> Task<Void, Never>? in
                guard !state.isStopped else { return task }
                defer { state.follower = task }
                return state.follower
            }
            old?.cancel()
        }

        private func taskEnded() {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.tasks -= 1
                guard state.tasks == 0 else { return [] }
                defer { state.endWaiters = [] }
                return state.endWaiters
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Claims the timer, runs its handler if its misfire policy says so, and ends the
        /// occurrence in the store.
        func run(_ key: String, manual: Bool, timers: DurableTimers) async {
            state.withLock { $0.manualRunsWaiting += 1 }
            let slot = await takeSlot()
            state.withLock { $0.manualRunsWaiting -= 1 }
            guard slot else { return }
            defer { giveSlot() }
            let now = timers.now()
            let leaseUntil = now.addingSaturating(options.lease.saturatingNanoseconds)
            let claim: DurableClaim
            do {
                claim = try await timers.store.claim(
                    namespace: timers.namespace, key: key, owner: timers.owner, now: now, leaseUntil: leaseUntil, early: manual)
            } catch {
                options.onError(error)
                return
            }
            // A manual fire that finds the timer held, moved or gone does nothing.
            guard case .claimed(let record) = claim else {
                options.onEvent(.claimed(requested: 1, claimed: 0))
                return
            }
            options.onEvent(.claimed(requested: 1, claimed: 1))
            await execute(record, manual: manual, now: now, timers: timers)
        }

        /// Runs a claimed occurrence's handler if its misfire policy says so, and ends the
        /// occurrence in the store.
        func execute(_ record: DurableTimerRecord, manual: Bool, now: Int64, timers: DurableTimers) async {
            let store = timers.store
            let namespace = timers.namespace
            let owner = timers.owner
            let key = record.key
            let leaseUntil = record.leaseUntil ?? now.addingSaturating(options.lease.saturatingNanoseconds)
            guard let handler = handler(record.handler) else {
                _ = try? await store.release(namespace: namespace, key: key, owner: owner, sequence: record.sequence, readyAt: now)
                return
            }
            let plan = manual ? OccurrencePlan.manual(record, now: now) : OccurrencePlan.make(record, now: now, grace: options.grace.saturatingNanoseconds)
            var outcome = plan.next
            /// Until when this runner's lease holds, as last renewed.
            let lease = Locked(leaseUntil)
            if plan.fires {
                let fire = DurableFire(
                    namespace: namespace, key: key, scheduledDeadline: Date(nanosecondsSince1970: plan.scheduledDeadline),
                    firedAt: Date(nanosecondsSince1970: now),
                    deadlineCount: plan.deadlineCount, skippedDeadlineCount: plan.skippedCount, attempt: record.attempts, sequence: record.sequence)
                state.withLock { $0.running[key, default: 0] += 1 }
                let renewal = renewLease(of: record, until: lease, timers: timers)
                let startedAt = timers.now()
                options.onEvent(
                    .started(
                        key: key, handler: record.handler, attempt: record.attempts, lateness: .nanoseconds(startedAt.addingSaturating(-plan.scheduledDeadline))
                    ))
                do {
                    try await handler(record.payload, fire)
                } catch let error as PayloadDecodingFailed {
                    outcome = .park(error: "the payload does not decode as the handler's type: \(error.reason)")
                } catch {
                    if record.attempts >= options.maxAttempts {
                        outcome = .park(error: "\(error)")
                    } else {
                        outcome = .retry(readyAt: timers.now().addingSaturating(retryDelay(after: record.attempts)), error: "\(error)")
                    }
                }
                // No renewal may land after the occurrence has ended in the store.
                renewal.cancel()
                await renewal.value
                state.withLock { state in
                    state.running[key]! -= 1
                    if state.running[key] == 0 { state.running[key] = nil }
                }
                let ended: DurableTimerEvent.Outcome =
                    switch outcome {
                    case .delete, .advance: .completed
                    case .retry(_, let error): .retrying(attempt: record.attempts, error: error)
                    case .park(let error): .parked(error: error)
                    }
                options.onEvent(.ended(key: key, handler: record.handler, duration: .nanoseconds(timers.now().addingSaturating(-startedAt)), outcome: ended))
            }
            do {
                let finished =
                    if case .delete = outcome {
                        try await complete(key, sequence: record.sequence, timers: timers)
                    } else {
                        try await store.finish(namespace: namespace, key: key, owner: owner, sequence: record.sequence, outcome: outcome)
                    }
                if finished {
                    switch outcome {
                    case .advance(let due, _, _): armIfLoaded(key, readyAt: due, handler: record.handler, timers: timers)
                    case .retry(let readyAt, _): armIfLoaded(key, readyAt: readyAt, handler: record.handler, timers: timers)
                    case .delete, .park: break
                    }
                } else if timers.now() >= lease.withLock({ $0 }) {
                    // Refused, and our lease had expired (the process was frozen, or renewals
                    // failed): another runner may have run the occurrence.
                    options.onError(.leaseLost(key))
                }
            } catch {
                // The claim stays until its lease expires; then the occurrence runs again.
                options.onError(error)
                arm(key, readyAt: leaseUntil, at: leaseUntil, timers: timers)
            }
        }

        /// Removes a completed one-shot in the next completion round: the completions that come while
        /// a round is in flight are written together in the following one, one store call for all.
        /// At rest a round is one timer; under load, many.
        private func complete(_ key: String, sequence: Int64, timers: DurableTimers) async throws(DurableTimerError) -> Bool {
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Bool, DurableTimerError>, Never>) in
                let leads = state.withLock { state -> Bool in
                    state.completions.append(PendingCompletion(completion: DurableCompletion(key: key, sequence: sequence), continuation: continuation))
                    guard !state.isCompleting else { return false }
                    state.isCompleting = true
                    return true
                }
                // Not `spawn`: the runs waiting here are counted already, and a round must run after
                // a stop too, since the runs under way finish.
                if leads { Task(executorPreference: timers.clock.taskExecutor) { await self.completionRounds(timers: timers) } }
            }
            return try result.get()
        }

        private func completionRounds(timers: DurableTimers) async {
            while true {
                let batch = state.withLock { state -> [PendingCompletion] in
                    defer { state.completions = [] }
                    if state.completions.isEmpty { state.isCompleting = false }
                    return state.completions
                }
                guard !batch.isEmpty else { return }
                let removed: Result<Set<String>, DurableTimerError>
                do {
                    removed = .success(try await timers.store.finishAll(namespace: timers.namespace, owner: timers.owner, completed: batch.map(\.completion)))
                } catch {
                    removed = .failure(error)
                }
                for pending in batch { pending.continuation.resume(returning: removed.map { $0.contains(pending.completion.key) }) }
            }
        }

        /// Renews a claim's lease every third of it, on a grid from the claim, until cancelled (its
        /// handler has ended).
        ///
        /// The renewals run in a task on the clock's executor, like the runs themselves: on a
        /// virtual clock an advance waits for a renewal due on the way as it waits for any run, so a
        /// runner never reads its own lease as expired because a renewal is still in flight.
        private func renewLease(of record: DurableTimerRecord, until current: Locked<Int64>, timers: DurableTimers) -> Task<Void, Never> {
            let lease = options.lease.saturatingNanoseconds
            let period = max(lease / 3, 1)
            let (store, clock) = (timers.store, timers.clock)
            let (namespace, key, owner, sequence) = (timers.namespace, record.key, timers.owner, record.sequence)
            let start = clock.now.nanoseconds
            return Task(executorPreference: clock.taskExecutor) {
                var renewals: Int64 = 1
                while !Task.isCancelled {
                    let (offset, overflow) = period.multipliedReportingOverflow(by: renewals)
                    let due = overflow ? Int64.max : start.addingSaturating(offset)
                    do {
                        try await clock.sleep(until: TimerInstant(kind: clock.kind, nanoseconds: due))
                    } catch {
                        return  // cancelled: the handler has ended (or the clock shut down)
                    }
                    let leaseUntil = timers.now().addingSaturating(lease)
                    if (try? await store.renew(namespace: namespace, key: key, owner: owner, sequence: sequence, leaseUntil: leaseUntil)) == true {
                        current.withLock { $0 = max($0, leaseUntil) }
                    }
                    // After a stall, the next renewal is the next one on the grid, not a burst.
                    let elapsed = clock.now.nanoseconds.addingSaturating(-start)
                    renewals = max(renewals + 1, elapsed / period + 1)
                }
            }
        }

        /// The wait before attempt `attempts + 1`: ``Options/retryDelay`` doubled per attempt after
        /// the first, at most ``Options/maxRetryDelay``.
        func retryDelay(after attempts: Int) -> Int64 {
            let base = options.retryDelay.saturatingNanoseconds
            let shift = min(max(attempts - 1, 0), 40)
            let (scaled, overflow) = base.multipliedReportingOverflow(by: 1 << Int64(shift))
            return min(overflow ? .max : scaled, options.maxRetryDelay.saturatingNanoseconds)
        }

        private func takeSlot() async -> Bool {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.isStopped || state.slotsTaken < options.maxConcurrentHandlers {
                        state.slotsTaken += 1
                        return true
                    }
                    state.slotWaiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
            return !state.withLock { $0.isStopped }
        }

        private func giveSlot() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if !state.slotWaiters.isEmpty { return state.slotWaiters.removeFirst() }  // the slot passes on
                state.slotsTaken -= 1
                return nil
            }
            next?.resume()
        }
    }
}
