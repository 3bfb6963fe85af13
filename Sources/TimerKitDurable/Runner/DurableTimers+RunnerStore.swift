import Foundation
import TimerKit

// The runner's store calls: each carries out one action of the state machine and feeds the
// answer back as the next transition.

extension DurableTimers.Runner {
    typealias Machine = RunnerStateMachine

    // MARK: Claims

    /// Carries out a claim round (``Machine/Action/claim(_:token:)`` or a sweep), then the next
    /// round, while the machine starts one: in this task, so that back-to-back rounds (a backlog,
    /// instances racing for the same keys) do not each wait for a new task to be scheduled.
    func claimRounds(_ first: Machine.Action) async {
        var next: Machine.Action? = first
        while let round = next {
            next = nil
            let actions: [Machine.Action]
            switch round {
            case .claim(let keys, let token): actions = await claim(keys, token: token)
            case .sweep(let limit, let token, let excluding, let skipping):
                actions = await sweep(limit: limit, token: token, excluding: excluding, skipping: skipping)
            default: return
            }
            perform(
                actions.filter { action in
                    switch action {
                    case .claim, .sweep:
                        next = action
                        return false
                    default:
                        return true
                    }
                })
        }
    }

    /// Claims up to `limit` ready timers of the backlog, the earliest first, and hands them to
    /// the machine; returns what to do next.
    private func sweep(limit: Int, token: String, excluding: [String], skipping: [String]) async -> [Machine.Action] {
        let began = context.monotonicNow()
        let now = context.now()
        let leaseUntil = now.addingSaturating(context.options.lease.saturatingNanoseconds)
        let result: Result<[DurableTimerRecord], DurableTimerError>
        do {
            result = .success(
                try await context.store.sweep(
                    namespace: context.namespace, handlers: handlerNames.filter { !skipping.contains($0) }, owner: token, excluding: excluding, now: now,
                    leaseUntil: leaseUntil, limit: limit))
        } catch {
            result = .failure(error)
        }
        let elapsed = began.duration(to: context.monotonicNow())
        // The caller carries out the actions: the next round runs in its task.
        return decide { machine, _ in (machine.sweepEnded(limit: limit, token: token, result: result, now: now, elapsed: elapsed), []) }
    }

    /// Claims a round's keys — the woken ones in one store call per lease (their handlers'),
    /// manual ones early, one by one — and hands every key's answer to the machine; returns what
    /// to do next.
    private func claim(_ round: [Machine.QueuedClaim], token: String) async -> [Machine.Action] {
        let (store, namespace) = (context.store, context.namespace)
        let began = context.monotonicNow()
        let now = context.now()
        var results: [StoredKey: Machine.ClaimResult] = [:]
        var failure: DurableTimerError?
        let batches = Dictionary(grouping: round.filter { !$0.isManual }, by: \.lease)
        for (lease, batch) in batches.sorted(by: { $0.key < $1.key }) {
            let leaseUntil = now.addingSaturating(lease)
            do {
                let claimed = try await store.claim(namespace: namespace, keys: batch.map(\.key.string), owner: token, now: now, leaseUntil: leaseUntil)
                for entry in batch { results[entry.key] = .gone }
                for record in claimed.claimed { results[StoredKey(record.key)] = .claimed(record) }
                for (key, readyAt) in claimed.waiting {
                    // A claim under way elsewhere shows the row as it was: its lease will end
                    // about a lease from now.
                    results[key] = claimed.held.contains(key) ? .heldElsewhere(until: max(readyAt, leaseUntil)) : .notReady(readyAt: readyAt)
                }
            } catch {
                failure = error
                for entry in batch { results[entry.key] = .failed }
            }
        }
        for entry in round where entry.isManual {
            do {
                let leaseUntil = now.addingSaturating(entry.lease)
                switch try await store.claim(namespace: namespace, key: entry.key.string, owner: token, now: now, leaseUntil: leaseUntil, early: true) {
                case .claimed(let record): results[entry.key] = .claimed(record)
                case .notReady(let readyAt): results[entry.key] = .notReady(readyAt: readyAt)
                case .gone: results[entry.key] = .gone
                }
            } catch {
                failure = error
                results[entry.key] = .failed
            }
        }
        // The plans and the fires' `firedAt` take the claim's time: the reading before the call.
        let elapsed = began.duration(to: context.monotonicNow())
        return decide { machine, _ in (machine.claimRoundEnded(round, token: token, results: results, failure: failure, now: now, elapsed: elapsed), []) }
    }

    // MARK: Ends of runs

    /// Writes a run's end: a one-shot's removal joins the next deletion round (one store call for
    /// every run that ended meanwhile), anything else is written at once.
    func finish(_ key: StoredKey, token: String, sequence: Int64, outcome: DurableTimerOutcome, run: DurableTimerRun?) {
        guard case .delete = outcome else {
            spawn {
                let result: Machine.WriteResult
                do throws(DurableTimerError) {
                    let changed = try await self.context.store.finish(
                        namespace: self.context.namespace, key: key.string, owner: token, sequence: sequence, outcome: outcome, run: run,
                        keep: self.context.options.history.runsPerTimer)
                    result = changed ? .applied : .refused
                } catch {
                    result = .failed(error)
                }
                let now = self.context.now()
                self.transition { $0.writeEnded(key, token: token, result: result, now: now) }
            }
            return
        }
        let leads = withHandles { _, handles -> Bool in
            handles.deletions.append((key, DurableCompletion(key: key.string, owner: token, sequence: sequence, run: run)))
            guard !handles.isDeleting else { return false }
            handles.isDeleting = true
            return true
        }
        if leads { spawn { await self.deletionRounds() } }
    }

    private func deletionRounds() async {
        while true {
            let batch = withHandles { _, handles -> [(key: StoredKey, completion: DurableCompletion)] in
                defer { handles.deletions = [] }
                if handles.deletions.isEmpty { handles.isDeleting = false }
                return handles.deletions
            }
            guard !batch.isEmpty else { return }
            let removed: Result<Set<StoredKey>, DurableTimerError>
            do {
                removed = .success(
                    try await context.store.finishAll(
                        namespace: context.namespace, completed: batch.map(\.completion), keep: context.options.history.runsPerTimer))
            } catch {
                removed = .failure(error)
            }
            let now = context.now()
            transition { machine in
                var actions: [Machine.Action] = []
                for (key, completion) in batch {
                    let result: Machine.WriteResult =
                        switch removed {
                        case .success(let keys): keys.contains(key) ? .applied : .refused
                        case .failure(let error): .failed(error)
                        }
                    actions += machine.writeEnded(key, token: completion.owner, result: result, now: now)
                }
                // One failed round is one failure to report, not one per timer.
                if case .failure = removed, let first = actions.firstIndex(where: { if case .report = $0 { true } else { false } }) {
                    actions = actions.enumerated().filter { index, action in
                        if case .report = action { return index == first }
                        return true
                    }.map(\.element)
                }
                return actions
            }
        }
    }

    /// Gives a claim back (its attempt does not count), ready again at `readyAt`.
    func release(_ key: StoredKey, token: String, sequence: Int64, readyAt: Int64) async {
        let result: Machine.WriteResult
        do {
            let changed = try await context.store.release(namespace: context.namespace, key: key.string, owner: token, sequence: sequence, readyAt: readyAt)
            result = changed ? .applied : .refused
        } catch {
            result = .failed(error)
        }
        let now = context.now()
        transition { $0.writeEnded(key, token: token, result: result, now: now) }
    }

    /// Extends held claims' leases: one write per lease's end (one, unless handlers have leases
    /// of their own).
    func renew(_ claims: [Machine.HeldClaim]) async {
        var result: Result<Set<StoredKey>, DurableTimerError> = .success([])
        let now = context.now()
        for (leaseUntil, group) in Dictionary(grouping: claims, by: \.leaseUntil).sorted(by: { $0.key < $1.key }) {
            do {
                let held = group.map { DurableHeldClaim(key: $0.key.string, owner: $0.token, sequence: $0.sequence) }
                let renewed = try await context.store.renewAll(namespace: context.namespace, claims: held, now: now, leaseUntil: leaseUntil)
                result = result.map { $0.union(renewed) }
            } catch {
                result = .failure(error)
            }
        }
        let after = context.now()
        transition { $0.renewalEnded(claims, result: result, now: after) }
    }
}
