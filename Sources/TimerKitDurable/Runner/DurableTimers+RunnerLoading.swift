import Foundation
import TimerKit

// The runner's loads: the horizon (what comes due soon, armed in memory; the overdue left to the
// backlog's sweep), the windows a batch's notification names, and the changes other instances
// send. The machine decides when a load runs and where it starts (``Loads``); this file reads.
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
            let leads = decide { machine, handles -> (Bool, [Machine.Action]) in
                if machine.horizonLoadRequested() { return (true, []) }
                handles.loadWaiters.append(continuation)
                return (false, [])
            }
            if leads { continuation.resume(returning: true) }
        }
        guard leads else { return }
        var served: [CheckedContinuation<Bool, Never>] = []
        while true {
            await loadHorizon()
            for waiter in served { waiter.resume(returning: false) }
            let again: Bool
            (again, served) = decide { machine, handles in
                defer { handles.loadWaiters = [] }
                return ((machine.horizonLoadEnded(), handles.loadWaiters), [])
            }
            if !again { return }
        }
    }

    /// Loads the timers ready from `from` through `through` (a batch another instance wrote, too
    /// large to be told of one by one), within what is loaded. One window load runs at a time,
    /// beside any load of the horizon; the windows asked for meanwhile are merged into one load
    /// after it (a storm of batches costs a load per batch at most, fewer when they come faster
    /// than a load takes).
    func loadWindow(from: Int64, through: Int64) {
        guard from <= through, let first = decide({ machine, _ in (machine.windowLoadRequested(from...through), []) }) else { return }
        spawn {
            var next: ClosedRange<Int64>? = first
            while let window = next {
                await self.loadWindow(window)
                next = self.decide { machine, _ in (machine.windowLoadEnded(), []) }
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
        let until = now.addingSaturating(options.horizon.saturatingNanoseconds)
        let begins = decide { machine, _ in (machine.horizonLoadBegins(until: until, piece: options.maximumArmed), []) }
        if begins != nil { probe { $0.horizonLoads += 1 } }
        guard let start = begins else {
            // The next piece waits until the runner holds fewer than half a piece.
            scheduleRefill(at: now.addingSaturating(1_000_000_000))
            return
        }
        let startingAfter = start.after
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
        transition { $0.horizonLoaded(loaded, from: start, until: loadedUntil, cutAt: truncated ? cursor : nil) }
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
        let loadedUntil = read { $0.loadedUntil }
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
        let old = withHandles { machine, handles -> ScheduledCallback? in
            guard machine.lifecycle == .running else { return callback }
            defer { handles.refill = callback }
            return handles.refill
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
                    self.transition { machine in
                        machine.reloadRequested()
                        return []
                    }
                    self.spawn { await self.refill() }
                case .window(let from, let through): self.loadWindow(from: from, through: through)
                }
            }
        }
        let old = withHandles { machine, handles -> Task<Void, Never>? in
            guard machine.lifecycle == .running else { return task }
            defer { handles.follower = task }
            return handles.follower
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
        let old = withHandles { machine, handles -> Task<Void, Never>? in
            guard machine.lifecycle == .running else { return task }
            defer { handles.offsetFollower = task }
            return handles.offsetFollower
        }
        old?.cancel()
    }

    /// Re-arms the wake-ups of the armed timers ready after `instant` (store time) at their ready
    /// times under the current offset.
    func rearmWakeUps(readyAfter instant: Int64) {
        let armed = read { machine in
            machine.occurrences.compactMap { key, occurrence -> (key: StoredKey, readyAt: Int64, generation: UInt64)? in
                guard case .armed(let readyAt, let generation) = occurrence.phase, readyAt > instant else { return nil }
                return (key, readyAt, generation)
            }
        }
        for wakeUp in armed { armWakeUp(wakeUp.key, at: wakeUp.readyAt, generation: wakeUp.generation) }
        probe { $0.rearmings += 1 }
    }
}
