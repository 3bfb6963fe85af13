import Foundation

// Over 400 lines, on purpose: this file routes every event between the parts the machine is
// composed of — each in a file of its own with its private state (Renewals, Admission,
// BacklogSweep, LeaseChecks, Loads) — and keeps the occurrences' phases, which every transition reads and
// changes: Swift's `private` ends at the file, so no other file can break their invariants. Its
// value types are in RunnerStateMachine+Types.swift.

/// The in-memory half of a durable-timer runner, as a pure value: every occurrence this process
/// knows of, from its wake-up to the write of its end, with named transitions that return what to
/// do (``Action``) instead of doing it.
///
/// An occurrence moves `armed → queued → claiming → running → completing`, then leaves the machine
/// (a one-shot done, a repeating timer armed at its next occurrence), or `→ releasing` when its
/// claim is given back. One key has at most one occurrence here, so this process never claims a
/// key it is running, and a wake-up, a notification or a refill that comes while the key is busy
/// only records a ready time for later (``Occurrence/deferredReadyAt``).
///
/// The store holds the truth: a claim is one fenced write, so a wake-up is only a reason to try.
/// What the machine guarantees on top, and the seeded model test checks over random event
/// sequences, is that while the process lives no occurrence runs twice here at once; that a claim
/// is held (renewed) from the claim until its end is written, retried if the write fails; that
/// every claim is counted as an attempt; and that a claim taken during shutdown is given back.
///
/// It is composed of parts with state of their own, each tested alone: ``Renewals`` (the renewal
/// tick and the renewal in flight), ``Admission`` (handler slots and the keys waiting for one),
/// ``BacklogSweep`` (the catch-up of overdue timers), ``LeaseChecks`` and ``Loads`` (the loads of
/// the horizon and of windows: when one runs, where it starts).
///
/// `DurableTimers.Runner` keeps it under a lock and carries out the actions outside it.
struct RunnerStateMachine: Sendable {
    let configuration: Configuration
    private(set) var lifecycle = Lifecycle.idle
    private(set) var occurrences: [StoredKey: Occurrence] = [:]
    /// Handler names registered with this runner.
    private(set) var handlers: Set<String> = []
    /// The policies of handlers registered with one of their own.
    private var policies: [String: HandlerPolicy] = [:]
    /// The handler slots (all of them, and each limited handler's), and the keys waiting for one.
    private(set) var admission: Admission
    /// Timers ready by this instant are armed (or busy); later ones are loaded later.
    private(set) var loadedUntil: Int64 = .min
    /// Keys waiting for a claim round, in order (entries whose key is no longer queued are skipped).
    private var queue = KeyQueue()
    private(set) var isClaimRoundInFlight = false
    /// Keys holding a claim (running or completing): the renewals' set.
    private(set) var held: Set<StoredKey> = []
    /// The renewal tick, the renewal in flight and the lease fixes waiting for one.
    private(set) var renewals = Renewals()
    private var claimRounds: UInt64 = 0
    private var generations: UInt64 = 0
    /// The sweep of overdue timers that wait in the store armed by no one.
    private(set) var sweep: BacklogSweep
    /// Claims a sweep took of keys whose handler runs here, being given back.
    private var strays: [Stray] = []
    /// The looks at claims other runners held, one a second at most.
    private var leaseChecks = LeaseChecks()
    /// The loads of the horizon and of windows under way, and where the next goes on from.
    private(set) var loads = Loads()

    init(configuration: Configuration) {
        self.configuration = configuration
        admission = Admission(capacity: configuration.maxConcurrentHandlers)
        sweep = BacklogSweep(tick: configuration.sweepTick, creditPerTick: configuration.sweepCreditPerTick)
    }

    /// Overdue timers may wait in the store, armed by no one: sweeps go on.
    var hasBacklog: Bool { sweep.isPending }

    /// The handler slots the sweep in flight took (its limit), or 0.
    var sweeping: Int { sweep.inFlight }

    /// Handler slots taken by keys claiming or running (at most `maxConcurrentHandlers`).
    var slotsTaken: Int { admission.taken }

    /// Slots taken by keys of each handler with a concurrency limit of its own, at most its limit.
    var handlerSlots: [String: Int] { admission.takenByHandler }

    // MARK: Lifecycle and handlers

    /// Registers a handler name with its own policy; `false` if it was registered already.
    mutating func register(_ handler: String, policy: HandlerPolicy = HandlerPolicy()) -> Bool {
        guard handlers.insert(handler).inserted else { return false }
        if policy != HandlerPolicy() { policies[handler] = policy }
        if let limit = policy.maxConcurrentRuns { admission.setLimit(limit, for: handler) }
        return true
    }

    /// The retry policy of `handler`: its own, or the runner's.
    func retry(for handler: String) -> Retry {
        policies[handler]?.retry
            ?? Retry(maxAttempts: configuration.maxAttempts, delay: configuration.retryDelay, maxDelay: configuration.maxRetryDelay, jitterPermille: 0)
    }

    /// The lease of `handler`'s claims: its own, or the runner's.
    func lease(for handler: String) -> Int64 { policies[handler]?.lease ?? configuration.lease }

    /// How often held claims are renewed: a third of the shortest lease.
    var renewalPeriod: Int64 {
        max(policies.values.reduce(configuration.lease) { shortest, policy in min(shortest, policy.lease ?? shortest) } / 3, 1)
    }

    /// The concurrency limit of `handler` in this process, if it has one of its own.
    func limit(for handler: String) -> Int? { admission.limit(for: handler) }

    /// Whether `handler` may take one more slot: it has no limit of its own, or room under it.
    private func hasRoom(_ handler: String) -> Bool { admission.hasRoom(handler) }

    /// Whether a key of `handler` that came due may be claimed: it has room, and the room is not
    /// kept for a sweep of its backlog.
    private func admits(_ handler: String) -> Bool { hasRoom(handler) && !sweep.owes(handler) }

    /// Starts the runner; `false` if it was started (or stopped) already.
    mutating func start() -> Bool {
        guard lifecycle == .idle else { return false }
        lifecycle = .running
        return true
    }

    /// Begins shutting down: disarms everything armed and queued; claims in flight will be given
    /// back; runs under way go on until ``graceExpired()``.
    mutating func stop() -> [Action] {
        switch lifecycle {
        case .idle:
            lifecycle = .stopped
            return [.drained]
        case .running:
            lifecycle = .stopping
        case .stopping, .stopped:
            return []
        }
        var actions: [Action] = []
        for (key, occurrence) in occurrences {
            switch occurrence.phase {
            case .armed(_, let generation):
                actions.append(.disarm(key, generation: generation))
                occurrences[key] = nil
            case .queued:
                occurrences[key] = nil
            case .claiming, .running, .completing, .releasing:
                break
            }
        }
        queue = KeyQueue()
        admission.stopWaiting()
        sweep.stop()
        return actions + checkDrained()
    }

    /// The shutdown's grace period ended: cancels every run still under way (each gives its claim
    /// back when its handler ends by throwing).
    mutating func graceExpired() -> [Action] {
        guard lifecycle == .stopping else { return [] }
        var actions: [Action] = []
        for key in held {
            guard var occurrence = occurrences[key], case .running(var run) = occurrence.phase, run.cancellation == nil else { continue }
            run.cancellation = .shutdown
            occurrence.phase = .running(run)
            occurrences[key] = occurrence
            actions.append(.cancelHandler(key, token: run.token))
        }
        return actions
    }

    /// Whether the key's handler is running here (or its end is being written).
    func isRunning(_ key: StoredKey) -> Bool { held.contains(key) }

    /// Keys that came due and wait for a claim round or a free handler slot: those of the queue
    /// still queued (a key can appear in it more than once), not a pass over every armed key.
    var waitingCount: Int {
        var seen: Set<StoredKey> = []
        return ([queue] + admission.waitingQueues).reduce(0) { count, keys in
            keys.remaining.reduce(count) { count, key in
                guard seen.insert(key).inserted, case .queued? = occurrences[key]?.phase else { return count }
                return count + 1
            }
        }
    }

    /// Handlers running here.
    var runningCount: Int {
        held.reduce(0) { count, key in
            if case .running = occurrences[key]?.phase { return count + 1 }
            return count
        }
    }

    // MARK: Loading and waking

    /// Everything ready by `instant` is being loaded: keys learned of later (a notification, a
    /// write of this runner) are armed if they are ready by then.
    mutating func loaded(until instant: Int64) { loadedUntil = max(loadedUntil, instant) }

    /// A load of the horizon is asked for: `true` to begin one now, `false` when the load after
    /// the one under way serves it (``Loads``).
    mutating func horizonLoadRequested() -> Bool { loads.requestHorizon() }

    /// The load of the horizon ended: `true` to load it once more for the requests that came.
    mutating func horizonLoadEnded() -> Bool { loads.horizonEnded() }

    /// A load of the horizon begins, to read the timers ready by `until`: where it starts — or
    /// `nil` to put it off, while the runner holds at least half of `piece` timers and the load
    /// before was cut short at `piece` (so its memory stays bounded by a piece). A load from the
    /// beginning covers `until` at once: what another instance writes meanwhile is armed as it is
    /// told, not dropped as beyond what is loaded.
    mutating func horizonLoadBegins(until: Int64, piece: Int) -> Loads.Start? {
        let start = loads.start
        if start.after != nil, occurrences.count >= max(piece / 2, 1) { return nil }
        if start.after == nil { loaded(until: until) }
        return start
    }

    /// The load of the horizon that began at `start` read `timers`, ready by `until` — cut short
    /// at `cursor`, when it was: arms them, and sweeps the backlog if it may wait.
    mutating func horizonLoaded(_ timers: [DurableReadyTimer], from start: Loads.Start, until: Int64, cutAt cursor: DurableTimerCursor?) -> [Action] {
        loads.horizonRead(from: start, cutAt: cursor)
        loaded(until: until)
        return timers.flatMap { load(StoredKey($0.key), readyAt: $0.readyAt, handler: $0.handler) } + backlogMayWait()
    }

    /// Changes may have been missed anywhere: the next load of the horizon starts from the
    /// beginning.
    mutating func reloadRequested() { loads.reload() }

    /// A load of the timers ready within `window` is asked for: the window to load now (within
    /// what is loaded), or `nil` when a window load is under way (it is merged into the next).
    mutating func windowLoadRequested(_ window: ClosedRange<Int64>) -> ClosedRange<Int64>? {
        guard lifecycle == .running else { return nil }
        return loads.requestWindow(window)
    }

    /// The load of a window ended: the window to load next, or `nil`.
    mutating func windowLoadEnded() -> ClosedRange<Int64>? { loads.windowEnded() }

    /// The store says `key` (for `handler`, when known) is ready at `readyAt`: arms a wake-up at
    /// `wakeAt` (a catch-up's spread offset) or at `readyAt`, or records it for later while the
    /// key is busy. A key ready past what is loaded, or for a handler not registered here, is
    /// disarmed.
    mutating func load(_ key: StoredKey, readyAt: Int64, wakeAt: Int64? = nil, handler: String? = nil) -> [Action] {
        guard lifecycle == .running else { return [] }
        let wanted = readyAt <= loadedUntil && (handler.map(handlers.contains) ?? true)
        guard var occurrence = occurrences[key] else {
            return wanted ? arm(key, readyAt: readyAt, at: wakeAt ?? readyAt, handler: handler) : []
        }
        if let handler { occurrence.handler = handler }
        switch occurrence.phase {
        case .armed(let armedAt, let generation):
            guard wanted else {
                occurrences[key] = nil
                return [.disarm(key, generation: generation)]
            }
            occurrences[key] = occurrence
            return armedAt == readyAt ? [] : arm(key, readyAt: readyAt, at: wakeAt ?? readyAt, handler: occurrence.handler)
        case .queued, .claiming, .running, .completing, .releasing:
            occurrence.deferredReadyAt = wanted ? readyAt : nil
            occurrence.isRemoved = false
            occurrences[key] = occurrence
            return []
        }
    }

    /// The timer under `key` was removed (here, or on another instance): disarms it, and cancels
    /// its run if one is under way here.
    mutating func removed(_ key: StoredKey) -> [Action] {
        guard var occurrence = occurrences[key] else { return [] }
        switch occurrence.phase {
        case .armed(_, let generation):
            occurrences[key] = nil
            return [.disarm(key, generation: generation)]
        case .queued:
            occurrences[key] = nil
            return []
        case .running(var run):
            occurrence.isRemoved = true
            occurrence.deferredReadyAt = nil
            var actions: [Action] = []
            if run.cancellation == nil {
                run.cancellation = .removed
                actions.append(.cancelHandler(key, token: run.token))
            }
            occurrence.phase = .running(run)
            occurrences[key] = occurrence
            return actions
        case .claiming, .completing, .releasing:
            occurrence.isRemoved = true
            occurrence.deferredReadyAt = nil
            occurrences[key] = occurrence
            return []
        }
    }

    /// A wake-up armed for `key` came: queues it for a claim round.
    mutating func wokeUp(_ key: StoredKey, generation: UInt64) -> [Action] {
        guard lifecycle == .running, case .armed(_, generation)? = occurrences[key]?.phase else { return [] }
        occurrences[key]!.phase = .queued(isManual: false)
        queue.append(key)
        return nextClaimRound()
    }

    /// ``DurableTimers/fire(key:)``: queues an early claim of `key`. `false` if the key is busy
    /// here (claimed or running) or the runner is not running.
    mutating func fireManually(_ key: StoredKey) -> (queued: Bool, actions: [Action]) {
        guard lifecycle == .running else { return (false, []) }
        var actions: [Action] = []
        switch occurrences[key]?.phase {
        case nil:
            occurrences[key] = Occurrence(phase: .queued(isManual: true))
            queue.append(key)
        case .armed(_, let generation):
            actions.append(.disarm(key, generation: generation))
            occurrences[key]!.phase = .queued(isManual: true)
            queue.append(key)
        case .queued:
            occurrences[key]!.phase = .queued(isManual: true)
        case .claiming, .running, .completing, .releasing:
            return (false, [])
        }
        return (true, actions + nextClaimRound())
    }

    // MARK: Claiming

    /// Starts a claim round with as many queued keys as there are free handler slots, unless one
    /// is in flight (keys queued meanwhile join the next).
    private mutating func nextClaimRound() -> [Action] {
        guard lifecycle == .running, !isClaimRoundInFlight else { return [] }
        var actions: [Action] = []
        // The part of the backlog a sweep left to handlers without room: swept next, now that
        // one of them has some.
        if sweep.revive(where: hasRoom) { actions = armSweepTick() }
        claimRounds += 1
        let token = "\(configuration.owner)/\(claimRounds)"
        // Woken keys and the backlog's sweep take turns while both wait: on-time work that keeps
        // every slot busy must not starve the backlog, nor the backlog it.
        if !sweep.isTurn || !canSweep {
            var round: [QueuedClaim] = []
            // Keys that waited for a slot of their handler go first, as far as it has room.
            for handler in admission.waitingHandlers where admits(handler) {
                while admission.free > 0, admits(handler), let key = admission.nextWaiting(for: handler) {
                    guard case .queued(let isManual)? = occurrences[key]?.phase else { continue }
                    round.append(take(key, isManual: isManual, token: token))
                }
                admission.dropQueueIfEmpty(for: handler)
            }
            while admission.free > 0, let key = queue.popFirst() {
                guard case .queued(let isManual)? = occurrences[key]?.phase else { continue }
                if let handler = occurrences[key]?.handler, !admits(handler) {
                    // Its handler's slots are all taken: it waits here for one, unclaimed (another
                    // instance may run it meanwhile).
                    admission.wait(key, for: handler)
                    continue
                }
                round.append(take(key, isManual: isManual, token: token))
            }
            if !round.isEmpty {
                sweep.keysWent()
                isClaimRoundInFlight = true
                return actions + [.claim(round, token: token)]
            }
        }
        // A sweep of the backlog, as many as the free slots and the credit allow, of the handlers
        // with room.
        guard canSweep else { return actions }
        let limit = sweep.start(freeSlots: admission.free, skipping: admission.fullHandlers)
        admission.take(limit)
        isClaimRoundInFlight = true
        // No key claims while the sweep is in flight: these are all the claims held here.
        let holding = held.compactMap { key -> String? in
            switch occurrences[key]?.phase {
            case .running(let run)?, .completing(let run, _)?: run.token
            default: nil
            }
        }
        return actions + [.sweep(limit: limit, token: token, excluding: holding.sorted(), skipping: sweep.skipped)]
    }

    /// Takes a slot (and its handler's, when known) for a queued key joining the claim round
    /// `token`.
    private mutating func take(_ key: StoredKey, isManual: Bool, token: String) -> QueuedClaim {
        occurrences[key]!.phase = .claiming(token: token, isManual: isManual)
        admission.take()
        let handler = occurrences[key]!.handler
        if let handler { takeHandlerSlot(key, handler) }
        return QueuedClaim(key: key, isManual: isManual, lease: handler.map(lease(for:)) ?? configuration.lease)
    }

    /// Takes a slot of `handler` for `key`, if the handler has a limit of its own.
    private mutating func takeHandlerSlot(_ key: StoredKey, _ handler: String) {
        if admission.takeHandlerSlot(handler) { occurrences[key]!.slotHandler = handler }
    }

    /// Frees the slot `key` took, and its handler's.
    private mutating func freeSlot(_ key: StoredKey) {
        admission.give()
        freeHandlerSlot(key)
    }

    /// Frees the slot of its handler that `key` took, if it took one.
    private mutating func freeHandlerSlot(_ key: StoredKey) {
        guard let handler = occurrences[key]?.slotHandler else { return }
        occurrences[key]!.slotHandler = nil
        admission.giveHandlerSlot(handler)
    }

    /// Whether a sweep may start: a backlog, a free slot, credit.
    private var canSweep: Bool {
        sweep.mayStart(freeSlots: admission.free, capacity: admission.capacity, anyHandlerHasRoom: policies.isEmpty || handlers.contains(where: hasRoom))
    }

    // MARK: Sweeping a backlog

    /// Overdue timers may wait in the store unarmed (a load of the horizon leaves the overdue
    /// ones there, or a sweep's check after its lease): sweep rounds claim them, at most
    /// ``Configuration/sweepCreditPerTick`` a tick, until a sweep finds fewer than it asked for.
    mutating func backlogMayWait() -> [Action] {
        guard lifecycle == .running else { return [] }
        sweep.begin()
        return nextClaimRound() + armSweepTick()
    }

    /// The sweep's tick: its credit grows (``BacklogSweep/tickCame()``), and a sweep may go.
    mutating func sweepTickDue() -> [Action] {
        guard sweep.tickCame(), lifecycle == .running else { return [] }
        return nextClaimRound() + armSweepTick()
    }

    /// A sweep round ended with the records it claimed (or the store's error): runs them as a
    /// claim round's, and ends the backlog when it found fewer than `limit`.
    mutating func sweepEnded(limit: Int, token: String, result: Result<[DurableTimerRecord], DurableTimerError>, now: Int64, elapsed: Int64) -> [Action] {
        guard isClaimRoundInFlight else { return impossible("a sweep ended while no claim round was in flight") }
        isClaimRoundInFlight = false
        var actions: [Action] = []
        let check: BacklogSweep.Check?
        switch result {
        case .failure(let error):
            admission.give(limit)
            actions.append(.report(error))
            check = sweep.ended(found: nil, limit: limit)
        case .success(let records):
            admission.give(limit - records.count)
            // What it left to handlers without room is swept at their next free slot.
            check = sweep.ended(found: records.count, limit: limit)
            for record in records {
                actions += adopt(StoredKey(record.key), record, token: token, now: now, elapsed: elapsed)
            }
            actions.append(.event(.claimed(requested: records.count, claimed: records.count)))
        }
        switch check {
        case .afterRetryDelay?:
            // Tried again after the retry delay, not at the next tick: no spinning on an error.
            actions.append(.scheduleBacklogCheck(after: configuration.retryDelay))
        case .afterLease?:
            // Rows other runners' sweeps held may come back when a claim lapses (its process
            // died): looked at once more after a lease, if this backlog had any.
            actions.append(.scheduleBacklogCheck(after: configuration.lease))
        case nil:
            break
        }
        return actions + nextClaimRound() + checkDrained()
    }

    /// A record a sweep claimed becomes the key's claiming occurrence and runs as a claim
    /// round's would: an armed or queued occurrence of the key gives way to it.
    private mutating func adopt(_ key: StoredKey, _ record: DurableTimerRecord, token: String, now: Int64, elapsed: Int64) -> [Action] {
        var actions: [Action] = []
        var occurrence = occurrences[key] ?? Occurrence(phase: .queued(isManual: false))
        switch occurrence.phase {
        case .armed(_, let generation):
            actions.append(.disarm(key, generation: generation))
        case .queued:
            break
        case .releasing(var run, let readyAt, _):
            // Its claim lapsed while it was being given back, and the sweep took the row: the old
            // release will be refused; this claim is given back instead.
            admission.give()
            run.token = token
            run.sequence = record.sequence
            occurrences[key]!.phase = .releasing(run, readyAt: readyAt, failures: 0)
            return [.release(key, token: token, sequence: record.sequence, readyAt: readyAt)]
        case .completing:
            // Its end's write landed (a retry, an advance: the row is free again) or its lease
            // lapsed, and the sweep took the row: the claim is this one now, and the old write
            // will be refused. It runs as a new claim (at least once).
            held.remove(key)
        case .claiming, .running:
            // A handler of the key runs here (its claim lost, and the row freed by another
            // runner since): never two at once. Given back, and waited for before draining.
            admission.give()
            strays.append(Stray(key: key, token: token, sequence: record.sequence, readyAt: now))
            return [.release(key, token: token, sequence: record.sequence, readyAt: now)]
        }
        occurrence.phase = .claiming(token: token, isManual: false)
        occurrence.refusals = 0
        occurrences[key] = occurrence
        return actions + claimed(key, record, token: token, isManual: false, lease: configuration.lease, now: now, elapsed: elapsed)
    }

    /// A lease check armed at `instant` (``Action/scheduleLeaseCheck(at:)``) is due: the
    /// backlog is swept for claims that lapsed.
    mutating func leaseCheckDue(at instant: Int64) -> [Action] {
        leaseChecks.came(at: instant)
        return backlogMayWait()
    }

    /// Arms a lease check at the first whole second after `until`, unless one is armed then.
    private mutating func armLeaseCheck(at until: Int64) -> [Action] {
        guard lifecycle == .running, let instant = leaseChecks.arm(after: until) else { return [] }
        return [.scheduleLeaseCheck(at: instant)]
    }

    private mutating func armSweepTick() -> [Action] {
        sweep.armTick() ? [.scheduleSweepTick(after: sweep.tick)] : []
    }

    /// A claim round ended: starts the runs it claimed (or parks, advances or gives back what it
    /// must not run), re-arms what it did not claim, and starts the next round. `failure` is the
    /// store's error for the keys whose claim ``ClaimResult/failed``; `elapsed` is how long the
    /// round took, on a monotonic clock, from before its request was sent.
    mutating func claimRoundEnded(
        _ round: [QueuedClaim], token: String, results: [StoredKey: ClaimResult], failure: DurableTimerError?, now: Int64, elapsed: Int64
    ) -> [Action] {
        guard isClaimRoundInFlight else { return impossible("a claim round ended while none was in flight") }
        isClaimRoundInFlight = false
        var actions: [Action] = failure.map { [.report($0)] } ?? []
        var claimed = 0
        for entry in round {
            guard case .claiming(token, let isManual)? = occurrences[entry.key]?.phase else { continue }
            switch results[entry.key] ?? .gone {
            case .claimed(let record):
                claimed += 1
                actions += self.claimed(entry.key, record, token: token, isManual: isManual, lease: entry.lease, now: now, elapsed: elapsed)
            case .notReady(let readyAt):
                freeSlot(entry.key)
                // Held by another runner (watch it: it runs here if that runner dies), or moved. A
                // ready time the store refuses although it has come by this runner's clock — a row
                // another claim is writing right now, or a clock that runs ahead of the store's —
                // is tried again shortly, backing off: never a claim every few milliseconds.
                let refusals = readyAt <= now ? (occurrences[entry.key]?.refusals ?? 0) + 1 : 0
                let wakeAt = refusals > 0 ? now.addingSaturating(5_000_000 << Int64(min(refusals - 1, 8))) : readyAt
                actions += settle(entry.key, readyAt: readyAt, wakeAt: wakeAt)
                if refusals > 0, case .armed? = occurrences[entry.key]?.phase { occurrences[entry.key]!.refusals = refusals }
            case .heldElsewhere(let until):
                freeSlot(entry.key)
                // Another runner runs it: nothing to arm here. Should that runner die, its claim
                // lapses at `until` and a sweep then takes the row: one look a second, for all
                // the keys found held, instead of one claim per key at its lease's end — which,
                // with instances racing for every key, was a second failed claim per fire.
                actions += settle(entry.key, readyAt: nil) + armLeaseCheck(at: until)
            case .gone:
                freeSlot(entry.key)
                actions += settle(entry.key, readyAt: nil)
            case .failed:
                freeSlot(entry.key)
                // Try again after a while; the store keeps the timer meanwhile.
                actions += settle(entry.key, readyAt: now, wakeAt: now.addingSaturating(configuration.retryDelay))
            }
        }
        actions.append(.event(.claimed(requested: round.count, claimed: claimed)))
        return actions + nextClaimRound() + checkDrained()
    }

    /// A claim of `key`, written with `lease`, came back with its record: runs it, or parks,
    /// advances or gives back what it must not run (or cannot yet: its handler's slots are all
    /// taken).
    private mutating func claimed(
        _ key: StoredKey, _ record: DurableTimerRecord, token: String, isManual: Bool, lease: Int64, now reading: Int64, elapsed: Int64
    ) -> [Action] {
        // The claim's time on the store's clock: the lease it wrote began then. A store that
        // decides on a clock of its own (PostgreSQL) claims after the reading taken before the
        // call — by the call's latency, and the measured offset's error — so the reading alone
        // could date a fire the store found due before its deadline.
        let now = max(reading, (record.leaseUntil ?? reading).addingSaturating(-lease))
        var run = Run(
            token: token, sequence: record.sequence, handler: record.handler, attempt: record.attempts,
            leaseUntil: record.leaseUntil ?? now.addingSaturating(lease), isManual: isManual, due: record.due, next: .delete)
        occurrences[key]?.handler = record.handler
        // A slot taken for the handler the key had when it was loaded, if another has it now.
        if let taken = occurrences[key]?.slotHandler, taken != record.handler { freeHandlerSlot(key) }
        // Not run: during a shutdown, when removed meanwhile, for a handler not registered here,
        // and when its answer took a whole lease to arrive (the process was suspended in between:
        // the lease, which began after the request, may have passed, and another runner may hold
        // the occurrence now). Measured on a monotonic clock: no clock offset can fool it.
        let runnable = lifecycle == .running && occurrences[key]?.isRemoved == false && handlers.contains(record.handler)
        guard runnable, elapsed < lease else {
            freeSlot(key)
            guard runnable else { return release(key, run, now: now) }
            // Given back, and armed here again once that is written, like any ready timer: not
            // left unarmed until a sweep finds it overdue.
            let actions = release(key, run, now: now)
            if case .releasing(_, let readyAt, _)? = occurrences[key]?.phase { occurrences[key]!.deferredReadyAt = readyAt }
            return [
                .report(
                    .store(
                        reason:
                            "the claim of '\(key.string)' was answered after \(Duration.nanoseconds(elapsed)), longer than its lease of \(Duration.nanoseconds(lease)): it was given back"
                    ))
            ]
                + actions
        }
        let maxAttempts = retry(for: record.handler).maxAttempts
        if record.attempts > maxAttempts {
            freeSlot(key)
            let reason =
                "its handler started \(record.attempts - 1) times without finishing: the process running it ended each time (it crashed, was killed, or froze past its lease); parked after maxAttempts (\(maxAttempts))"
            let entry = run.entry(key, started: now, ended: now, outcome: .park(error: reason))
            return complete(key, run, Completion(outcome: .park(error: reason), run: entry))
                + [.event(.parked(key: key.string, handler: record.handler, reason: reason))]
        }
        let plan = isManual ? OccurrencePlan.manual(record, now: now) : OccurrencePlan.make(record, now: now, grace: configuration.grace)
        guard plan.fires else {
            freeSlot(key)
            var entry: DurableTimerRun?
            if case .park = plan.next { entry = run.entry(key, started: now, ended: now, outcome: plan.next) }
            var actions = complete(key, run, Completion(outcome: plan.next, run: entry))
            if case .park(let reason) = plan.next { actions.append(.event(.parked(key: key.string, handler: record.handler, reason: reason))) }
            return actions
        }
        if limit(for: record.handler) != nil, occurrences[key]?.slotHandler == nil {
            guard hasRoom(record.handler) else {
                // Claimed before its handler was known here (a sweep, a manual fire), and the
                // handler's slots are all taken: given back (its attempt does not count), then it
                // waits here for a slot.
                admission.give()
                occurrences[key]!.waitsForSlot = true
                return release(key, run, now: now)
            }
            takeHandlerSlot(key, record.handler)
        }
        run.next = plan.next
        run.startedAt = now
        occurrences[key]!.phase = .running(run)
        held.insert(key)
        var actions: [Action] = [.start(key, Start(record: record, plan: plan, token: token, claimedAt: now))]
        // Written with another lease than the handler's: the handler's is set at once.
        if lease != self.lease(for: record.handler) {
            renewals.needsFix(key)
            actions += renew(.fixes, now: now)
        }
        return actions + armRenewal()
    }

    // MARK: Running and completing

    /// A run's handler ended after `duration`: writes the occurrence's end (or gives the claim
    /// back after a shutdown's cancellation, or writes nothing for a removed timer).
    mutating func handlerEnded(_ key: StoredKey, token: String, result: HandlerResult, duration: Duration, now: Int64) -> [Action] {
        guard case .running(let run)? = occurrences[key]?.phase, run.token == token else {
            return impossible("the handler of \(key.string) ended, but no run with its token is under way")
        }
        freeSlot(key)
        // The slot is free: a key waiting for one is claimed.
        return ended(key, run, result: result, duration: duration, now: now) + nextClaimRound()
    }

    private mutating func ended(_ key: StoredKey, _ run: Run, result: HandlerResult, duration: Duration, now: Int64) -> [Action] {
        let outcome: DurableTimerOutcome
        switch (result, run.cancellation) {
        case (.undecodable(let reason), _):
            outcome = .park(error: DurableLimits.storedError("the payload does not decode as the handler's type: \(reason)"))
        case (.returned, .removed), (.threw, .removed):
            held.remove(key)
            return [.event(.ended(key: key.string, handler: run.handler, duration: duration, outcome: .cancelled))] + settle(key, readyAt: nil) + checkDrained()
        case (.threw, .shutdown):
            held.remove(key)
            return [.event(.ended(key: key.string, handler: run.handler, duration: duration, outcome: .released))] + release(key, run, now: now)
        case (.returned, _):
            outcome = run.next
        case (.threw(let error), let cancellation):
            var text = error
            if case .timedOut(let timeout) = cancellation { text = "the handler did not finish within its timeout of \(timeout)" }
            if case .leaseLost = cancellation { text = "the handler was cancelled: its claim's lease was lost (\(error))" }
            text = DurableLimits.storedError(text)
            let policy = retry(for: run.handler)
            outcome =
                run.attempt >= policy.maxAttempts
                ? .park(error: text) : .retry(readyAt: now.addingSaturating(policy.delay(after: run.attempt, key: key)), error: text)
        }
        let ended: DurableTimerEvent.Outcome =
            switch outcome {
            case .delete, .advance: .completed
            case .retry(_, let error): .retrying(attempt: run.attempt, error: error)
            case .park(let error): .parked(error: error)
            }
        let entry = run.entry(key, started: run.startedAt, ended: max(now, run.startedAt), outcome: outcome)
        return [.event(.ended(key: key.string, handler: run.handler, duration: duration, outcome: ended))]
            + complete(key, run, Completion(outcome: outcome, run: entry))
    }

    /// The write of a run's end (or of a release) came back.
    mutating func writeEnded(_ key: StoredKey, token: String, result: WriteResult, now: Int64) -> [Action] {
        if let index = strays.firstIndex(where: { $0.key == key && $0.token == token }) {
            guard case .failed(let error) = result else {
                strays.remove(at: index)
                return checkDrained()
            }
            strays[index].failures += 1
            return [.report(error), .retryFinish(key, token: token, after: completionRetryDelay(after: strays[index].failures))]
        }
        switch occurrences[key]?.phase {
        case .completing(let run, var completion)? where run.token == token:
            switch result {
            case .applied:
                held.remove(key)
                let next: Int64? =
                    switch completion.outcome {
                    case .advance(let due, _, _): due
                    case .retry(let readyAt, _): readyAt
                    case .delete, .park: nil
                    }
                return settle(key, readyAt: next) + checkDrained()
            case .refused:
                held.remove(key)
                // Refused after a failed try: that try may have landed. Refused otherwise: the
                // claim was lost (reported, unless a renewal did already), or the timer was
                // replaced or removed meanwhile.
                let lost = completion.failures == 0 && run.cancellation != .leaseLost && (completion.renewalRefused || now >= run.leaseUntil)
                return (lost ? [.report(.leaseLost(key.string))] : []) + settle(key, readyAt: nil) + checkDrained()
            case .failed(let error):
                // Retried while the process lives: the write is fenced, and the key stays busy
                // here, so this process never claims the occurrence again meanwhile.
                completion.failures += 1
                occurrences[key]!.phase = .completing(run, completion)
                return [.report(error), .retryFinish(key, token: token, after: completionRetryDelay(after: completion.failures))]
            }
        case .releasing(let run, let readyAt, var failures)? where run.token == token:
            guard case .failed(let error) = result else {
                guard lifecycle == .running, occurrences[key]!.waitsForSlot, !occurrences[key]!.isRemoved else {
                    return settle(key, readyAt: nil) + checkDrained()
                }
                // Given back for want of a handler slot: it waits here for one.
                occurrences[key]!.waitsForSlot = false
                occurrences[key]!.deferredReadyAt = nil
                occurrences[key]!.phase = .queued(isManual: run.isManual)
                admission.wait(key, for: run.handler)
                return nextClaimRound()
            }
            // Retried while the process lives, so that a claim is not left to wait out its lease.
            failures += 1
            occurrences[key]!.phase = .releasing(run, readyAt: readyAt, failures: failures)
            return [.report(error), .retryFinish(key, token: token, after: completionRetryDelay(after: failures))]
        default:
            // A write for a claim since replaced — a sweep took the row after the write landed or
            // the lease lapsed (``adopt(_:_:token:now:elapsed:)``) — is stale: it was refused.
            guard occurrences[key]?.phase.token == token else { return [] }
            return impossible("the write of \(key.string)'s end came back while its claim is not being ended")
        }
    }

    /// A failed write of a run's end (or of its release) is due to be tried again.
    mutating func retryFinishDue(_ key: StoredKey, token: String) -> [Action] {
        if let stray = strays.first(where: { $0.key == key && $0.token == token }) {
            return [.release(key, token: token, sequence: stray.sequence, readyAt: stray.readyAt)]
        }
        switch occurrences[key]?.phase {
        case .completing(let run, let completion)? where run.token == token:
            return [.finish(key, token: token, sequence: run.sequence, outcome: completion.outcome, run: completion.run)]
        case .releasing(let run, let readyAt, _)? where run.token == token:
            return [.release(key, token: token, sequence: run.sequence, readyAt: readyAt)]
        default:
            // A claim since replaced (see ``writeEnded(_:token:result:now:)``) is not written again.
            guard occurrences[key]?.phase.token == token else { return [] }
            return impossible("a write of \(key.string)'s end was due again while its claim is not being ended")
        }
    }

    /// The run's handler outlived its timeout (`description` says which): cancels its task.
    mutating func timedOut(_ key: StoredKey, token: String, description: String) -> [Action] {
        cancel(key, token: token, because: .timedOut(description))
    }

    // MARK: Renewing

    /// The renewal tick: renews every held claim in one write, and arms the next tick while any
    /// claim is held.
    mutating func renewalDue(now: Int64) -> [Action] {
        renewals.tickCame()
        guard !held.isEmpty else { return [] }
        return armRenewal() + renew(.all, now: now)
    }

    /// Renews the held claims (`.all`), or those whose lease is not their handler's (`.fixes`),
    /// each to its handler's lease from `now` — unless a renewal is in flight: then they wait for
    /// its end (``Renewals``).
    private mutating func renew(_ scope: Renewals.Scope, now: Int64) -> [Action] {
        guard let keys = renewals.keys(for: scope, held: held) else { return [] }
        let claims = keys.compactMap { key -> HeldClaim? in
            switch occurrences[key]?.phase {
            case .running(let run)?, .completing(let run, _)?:
                HeldClaim(key: key, token: run.token, sequence: run.sequence, leaseUntil: now.addingSaturating(lease(for: run.handler)))
            default: nil
            }
        }
        guard !claims.isEmpty else { return [] }
        renewals.sent(scope)
        return [.renew(claims)]
    }

    /// A renewal came back: `renewed` holds the keys whose lease it extended (each to its claim's
    /// `leaseUntil`). A claim it found gone is lost: its run is cancelled. After a failure, a run
    /// whose lease has passed is cancelled too (another runner may claim it), and the failure is
    /// reported. Then the renewal that waited for this one goes.
    mutating func renewalEnded(_ claims: [HeldClaim], result: Result<Set<StoredKey>, DurableTimerError>, now: Int64) -> [Action] {
        guard renewals.flight != .none else { return impossible("a renewal ended while none was in flight") }
        let next = renewals.ended()
        var actions: [Action] = []
        if case .failure(let error) = result { actions.append(.report(error)) }
        for claim in claims {
            guard var occurrence = occurrences[claim.key] else { continue }
            switch (occurrence.phase, result) {
            case (.running(var run), .success(let renewed)) where run.token == claim.token:
                if renewed.contains(claim.key) {
                    // The store holds the renewal's lease now (shorter than the claim's, when the
                    // handler's lease is).
                    run.leaseUntil = claim.leaseUntil
                    occurrence.phase = .running(run)
                    occurrences[claim.key] = occurrence
                } else {
                    // Gone before its lease ended: replaced or removed. After: lost to another claim.
                    let expired = now >= run.leaseUntil
                    actions += cancel(claim.key, token: run.token, because: expired ? .leaseLost : .removed)
                    if expired { actions.append(.report(.leaseLost(claim.key.string))) }
                }
            case (.completing(var run, var completion), .success(let renewed)) where run.token == claim.token:
                if renewed.contains(claim.key) {
                    run.leaseUntil = claim.leaseUntil
                } else {
                    completion.renewalRefused = true
                }
                occurrence.phase = .completing(run, completion)
                occurrences[claim.key] = occurrence
            case (.running(let run), .failure) where run.token == claim.token && now >= run.leaseUntil && run.cancellation == nil:
                actions += cancel(claim.key, token: run.token, because: .leaseLost)
                actions.append(.report(.leaseLost(claim.key.string)))
            default:
                break
            }
        }
        // What waited for this renewal: a tick's (every held claim), or lease fixes.
        if let next { actions += renew(next, now: now) }
        return actions
    }

    // MARK: Plumbing

    private mutating func arm(_ key: StoredKey, readyAt: Int64, at instant: Int64, handler: String?) -> [Action] {
        generations += 1
        occurrences[key] = Occurrence(phase: .armed(readyAt: readyAt, generation: generations), handler: handler)
        return [.arm(key, at: instant, generation: generations)]
    }

    /// The key is no longer busy: arms it at the earlier of `readyAt` (what the store said) and a
    /// ready time learned meanwhile, or forgets it.
    private mutating func settle(_ key: StoredKey, readyAt: Int64?, wakeAt: Int64? = nil) -> [Action] {
        let (deferred, handler) = (occurrences[key]?.deferredReadyAt, occurrences[key]?.handler)
        occurrences[key] = nil
        switch (readyAt, deferred) {
        case (let readyAt?, let deferred?) where deferred < readyAt: return load(key, readyAt: deferred, handler: handler)
        case (let readyAt?, _): return load(key, readyAt: readyAt, wakeAt: wakeAt, handler: handler)
        case (nil, let deferred?): return load(key, readyAt: deferred, handler: handler)
        case (nil, nil): return []
        }
    }

    private mutating func complete(_ key: StoredKey, _ run: Run, _ completion: Completion) -> [Action] {
        occurrences[key]!.phase = .completing(run, completion)
        held.insert(key)
        // Held until the end is written (a park or an advance without a run included).
        return [.finish(key, token: run.token, sequence: run.sequence, outcome: completion.outcome, run: completion.run)] + armRenewal()
    }

    private mutating func release(_ key: StoredKey, _ run: Run, now: Int64) -> [Action] {
        let readyAt = run.isManual ? run.due : now
        occurrences[key]!.phase = .releasing(run, readyAt: readyAt, failures: 0)
        return [.release(key, token: run.token, sequence: run.sequence, readyAt: readyAt)]
    }

    private mutating func cancel(_ key: StoredKey, token: String, because reason: Cancellation) -> [Action] {
        guard var occurrence = occurrences[key], case .running(var run) = occurrence.phase, run.token == token, run.cancellation == nil else { return [] }
        run.cancellation = reason
        occurrence.phase = .running(run)
        occurrences[key] = occurrence
        return [.cancelHandler(key, token: token)]
    }

    private mutating func armRenewal() -> [Action] {
        renewals.armTick() ? [.scheduleRenewal(after: renewalPeriod)] : []
    }

    /// An event the machine's state rules out — a defect, never a race: it stops a debug build, and
    /// a release build reports it through `onError` and ignores it (never silently).
    private func impossible(_ event: String) -> [Action] {
        assertionFailure("RunnerStateMachine: \(event)")
        return [.report(.store(reason: "\(Self.ruledOut) (\(event)); it was ignored. This is a defect of TimerKit's: please report it"))]
    }

    /// How a report of an event the machine's state rules out begins.
    static let ruledOut = "the runner's state rules out what just happened"

    private mutating func checkDrained() -> [Action] {
        guard lifecycle == .stopping, occurrences.isEmpty, strays.isEmpty, !isClaimRoundInFlight else { return [] }
        lifecycle = .stopped
        return [.drained]
    }

    /// The wait before writing a run's end again after `failures` failed writes: 50 ms doubling,
    /// at most a third of the lease (renewals keep the claim meanwhile) and 5 s.
    func completionRetryDelay(after failures: Int) -> Int64 {
        let shift = Int64(min(max(failures - 1, 0), 20))
        return max(1_000_000, min(Int64(50_000_000).multipliedSaturating(by: 1 << shift), configuration.lease / 3, 5_000_000_000))
    }
}
