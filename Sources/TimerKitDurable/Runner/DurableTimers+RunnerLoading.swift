import Foundation
import TimerKit

// The runner's loads: the horizon (what comes due soon, armed in memory; the overdue left to the
// backlog's sweep), the windows a batch's notification names, the changes other instances send,
// and the instance's heartbeat and history pruning that ride on the refill.
extension DurableTimers.Runner {
    /// Loads the horizon (``loadHorizon()``), coalescing requests: one load runs at a time, and
    /// every request that comes while it runs is served by one more load after it (a burst of
    /// notifications to reload, or a refill due meanwhile, costs two loads, not one each). Returns
    /// when a load of the horizon that began after the request has ended (or, while the next piece
    /// of a backlog waits for the drain, has been put off).
    func refill() async {
        // Outside the application's transaction when a call in one asks for it (a pause of a
        // handler): the load must read what is committed, on the runner's own connections.
        guard DurableTransactionScope.current == nil else { return await DurableTransactionScope.outside { await refill() } }
        guard isStarted else { return }
        let leads: Bool = await withCheckedContinuation { continuation in
            let leads = state.withLock { state -> Bool in
                if state.loading {
                    state.loadWaiters.append(continuation)
                    return false
                }
                state.loading = true
                return true
            }
            if leads { continuation.resume(returning: true) }
        }
        guard leads else { return }
        var served: [CheckedContinuation<Bool, Never>] = []
        while true {
            await loadHorizon()
            for waiter in served { waiter.resume(returning: false) }
            served = state.withLock { state in
                defer { state.loadWaiters = [] }
                if state.loadWaiters.isEmpty { state.loading = false }
                return state.loadWaiters
            }
            if served.isEmpty { return }
        }
    }

    /// Records this instance as alive (``DurableTimers/instances()``), and prunes the run history
    /// by age, a batch per load: once per load of the horizon.
    private func recordAlive(now: Int64) async {
        let options = context.options
        let instance = DurableInstance(
            namespace: context.namespace, id: owner, host: ProcessInfo.processInfo.hostName, processID: ProcessInfo.processInfo.processIdentifier,
            handlers: handlerNames, started: now, seen: now, interval: options.horizon.saturatingNanoseconds / 2)
        do {
            try await context.store.heartbeat(instance)
            if options.history.runsPerTimer > 0 {
                let before = now.addingSaturating(-options.history.maxAge.saturatingNanoseconds)
                _ = try await context.store.pruneHistory(namespace: context.namespace, endedBefore: before, limit: Self.pruneBatch)
            }
        } catch {
            options.onError(error)
        }
    }

    /// The most history rows one prune removes: a short write, however much has aged out.
    static let pruneBatch = 5_000

    /// Loads the timers ready from `from` through `through` (a batch another instance wrote, too
    /// large to be told of one by one), within what is loaded. One window load runs at a time,
    /// beside any load of the horizon; the windows asked for meanwhile are merged into one load
    /// after it (a storm of batches costs a load per batch at most, fewer when they come faster
    /// than a load takes).
    func loadWindow(from: Int64, through: Int64) {
        guard isStarted, from <= through else { return }
        let leads = state.withLock { state -> Bool in
            guard !state.loadingWindow else {
                state.pendingWindow = state.pendingWindow.map { min($0.lowerBound, from)...max($0.upperBound, through) } ?? from...through
                return false
            }
            state.loadingWindow = true
            return true
        }
        guard leads else { return }
        spawn {
            var next: ClosedRange<Int64>? = from...through
            while let window = next {
                await self.loadWindow(window)
                next = self.state.withLock { state in
                    defer { state.pendingWindow = nil }
                    if state.pendingWindow == nil { state.loadingWindow = false }
                    return state.pendingWindow
                }
            }
        }
    }

    /// Loads every timer ready within the horizon from a second ago on and arms it, at most
    /// ``Options/maximumArmed`` of them: a load cut short there is carried on by the next from
    /// where it stopped, once the runner holds fewer than half that many timers (checked every
    /// second, without a query), or when the last one loaded comes due. Timers overdue by more
    /// than that second (after downtime, a backlog) are not loaded: the sweep claims them, the
    /// earliest first, `catchUpRate` a second, in rows disjoint from other runners' sweeps
    /// (``RunnerStateMachine/backlogMayWait()``), so a backlog costs no memory and instances
    /// divide it instead of racing for each key. Then arms the next load halfway through the
    /// horizon.
    private func loadHorizon() async {
        guard isStarted else { return }
        let began = context.monotonicNow()
        let options = context.options
        let now = context.now()
        // The next piece waits until the runner holds fewer than half a piece: its memory is
        // bounded by the piece.
        let holding = state.withLock { $0.resumeAfter != nil && $0.machine.occurrences.count >= max(options.maximumArmed / 2, 1) }
        if holding {
            scheduleRefill(at: now.addingSaturating(1_000_000_000))
            return
        }
        let until = now.addingSaturating(options.horizon.saturatingNanoseconds)
        // Recorded alive at most every sixth of the horizon: loads that notifications ask for (a
        // reload storm) do not each write a record.
        let heartbeatDue = state.withLock { state -> Bool in
            guard state.resumeAfter == nil, state.lastHeartbeat.map({ $0.duration(to: now) >= options.horizon.saturatingNanoseconds / 6 }) ?? true else {
                return false
            }
            state.lastHeartbeat = now
            return true
        }
        if heartbeatDue { spawn { await self.recordAlive(now: now) } }
        // What another instance writes while this load reads is armed as it is told (up to the
        // horizon), not dropped as "beyond what is loaded": a row committed behind the load's
        // position would otherwise wait for the next load.
        let (startingAfter, restarts) = state.withLock { state in
            state.horizonLoads += 1
            if state.resumeAfter == nil { state.machine.loaded(until: until) }
            return (state.resumeAfter, state.restarts)
        }
        // A second back: a timer just due is armed, as it would have been on time (and a clock a
        // little ahead of the store's cannot leave one between the load and the sweep).
        let recent = DurableTimerCursor(readyAt: now.addingSaturating(-Self.recentlyDue), key: "")
        var cursor: DurableTimerCursor? =
            if let startingAfter, (startingAfter.readyAt, startingAfter.key) > (recent.readyAt, recent.key) { startingAfter } else { recent }
        var loaded: [DurableReadyTimer] = []
        var truncated = false
        do {
            let names = handlerNames
            while true {
                let limit = min(Self.pageSize, options.maximumArmed - loaded.count)
                let page = try await context.store.ready(namespace: context.namespace, by: until, handlers: names, after: cursor, limit: limit)
                loaded += page
                guard page.count == limit, let last = page.last else { break }
                cursor = DurableTimerCursor(readyAt: last.readyAt, key: last.key)
                if loaded.count >= options.maximumArmed {
                    truncated = true
                    break
                }
            }
        } catch {
            options.onError(error)
            scheduleRefill(at: now.addingSaturating(options.retryDelay.saturatingNanoseconds))
            return
        }
        let loadedUntil = truncated ? loaded.last!.readyAt : until
        state.withLock { state in state.resumeAfter = truncated && state.restarts == restarts ? cursor : nil }
        transition { machine in
            machine.loaded(until: loadedUntil)
            var actions: [Machine.Action] = []
            for timer in loaded {
                actions += machine.load(StoredKey(timer.key), readyAt: timer.readyAt, handler: timer.handler)
            }
            return actions + machine.backlogMayWait()
        }
        context.options.onEvent(.loaded(scope: .horizon, timers: loaded.count, duration: .nanoseconds(context.monotonicNow() - began)))
        let next = truncated ? max(loadedUntil, now.addingSaturating(1_000_000)) : now.addingSaturating(options.horizon.saturatingNanoseconds / 2)
        scheduleRefill(at: next)
    }

    /// How far back a load of the horizon reads (nanoseconds): older timers are the sweep's.
    static let recentlyDue: Int64 = 1_000_000_000

    /// Loads the timers ready within `window`, as far as the horizon is loaded, and arms them.
    private func loadWindow(_ window: ClosedRange<Int64>) async {
        guard isStarted else { return }
        let began = context.monotonicNow()
        let loadedUntil = state.withLock { state in
            state.windowLoads += 1
            return state.machine.loadedUntil
        }
        let through = min(window.upperBound, loadedUntil)
        guard window.lowerBound <= through else { return }
        // Keys are never empty: a cursor at the window's first instant with the empty key takes
        // every timer ready then.
        var cursor: DurableTimerCursor? = DurableTimerCursor(readyAt: window.lowerBound, key: "")
        var loaded: [DurableReadyTimer] = []
        do {
            let names = handlerNames
            while let after = cursor {
                let page = try await context.store.ready(namespace: context.namespace, by: through, handlers: names, after: after, limit: Self.pageSize)
                loaded += page
                cursor = page.count == Self.pageSize ? page.last.map { DurableTimerCursor(readyAt: $0.readyAt, key: $0.key) } : nil
            }
        } catch {
            // The next load of the horizon takes them.
            context.options.onError(error)
            return
        }
        transition { machine in loaded.flatMap { machine.load(StoredKey($0.key), readyAt: $0.readyAt, handler: $0.handler) } }
        context.options.onEvent(.loaded(scope: .window, timers: loaded.count, duration: .nanoseconds(context.monotonicNow() - began)))
    }

    private func scheduleRefill(at instant: Int64) {
        let callback = schedule(at: instant) { runner in
            runner.spawn { await runner.refill() }
        }
        let old = state.withLock { state -> ScheduledCallback? in
            guard state.machine.lifecycle == .running else { return callback }
            defer { state.refill = callback }
            return state.refill
        }
        old?.cancel()
    }

    /// Follows the store's changes, if it reports them: arms what other runners wrote within the
    /// horizon, cancels what they removed (a run of it here included), and loads the horizon again
    /// when changes may have been missed.
    func follow(_ changes: AsyncStream<DurableTimerChange>) {
        let task = Task(executorPreference: context.controlExecutor) { [weak self] in
            for await change in changes {
                guard let self else { return }
                switch change {
                case .ready(let key, let readyAt, let handler): self.transition { $0.load(StoredKey(key), readyAt: readyAt, handler: handler) }
                case .removed(let key): self.transition { $0.removed(StoredKey(key)) }
                case .reload:
                    // Changes may have been missed anywhere: the load starts from the beginning.
                    self.state.withLock { state in
                        state.resumeAfter = nil
                        state.restarts += 1
                    }
                    self.spawn { await self.refill() }
                case .window(let from, let through): self.loadWindow(from: from, through: through)
                }
            }
        }
        let old = state.withLock { state -> Task<Void, Never>? in
            guard state.machine.lifecycle == .running else { return task }
            defer { state.follower = task }
            return state.follower
        }
        old?.cancel()
    }

    /// Follows the moves of the store's clock offset: each re-arms the wake-ups of the timers
    /// armed for the future — and, after a jump ahead, of those the jump made due — which were
    /// set at the host's reading of their ready time under the old offset (a wake-up early by the
    /// move would find its timer not ready and be armed again; one late by it would fire late).
    /// Overdue ones keep their catch-up offsets.
    func follow(offsets: AsyncStream<Int64>) {
        var previous = context.store.clockOffset
        let task = Task(executorPreference: context.controlExecutor) { [weak self] in
            for await offset in offsets {
                guard let self else { return }
                // A jump ahead makes timers due at once that were armed for later: those too.
                let jump = max(offset - previous, 0)
                previous = offset
                self.rearmWakeUps(readyAfter: self.context.now().addingSaturating(-jump))
            }
        }
        let old = state.withLock { state -> Task<Void, Never>? in
            guard state.machine.lifecycle == .running else { return task }
            defer { state.offsetFollower = task }
            return state.offsetFollower
        }
        old?.cancel()
    }

    /// Re-arms the wake-ups of the armed timers ready after `instant` (store time) at their ready
    /// times under the current offset.
    func rearmWakeUps(readyAfter instant: Int64) {
        let armed = state.withLock { state in
            state.machine.occurrences.compactMap { key, occurrence -> (key: StoredKey, readyAt: Int64, generation: UInt64)? in
                guard case .armed(let readyAt, let generation) = occurrence.phase, readyAt > instant else { return nil }
                return (key, readyAt, generation)
            }
        }
        for wakeUp in armed { armWakeUp(wakeUp.key, at: wakeUp.readyAt, generation: wakeUp.generation) }
        state.withLock { $0.rearmings += 1 }
    }
}
