import CTimerKitShims
import Synchronization

/// Callbacks (``ScheduledCallback``): one entry each, in a shard of a system clock chosen by the
/// scheduling thread (``CallbackShard``) or in the engine's own store on a virtual clock; cancelled
/// by index and sequence in O(1), run at most once (C8), their entries freed after the delivery.
extension TimerEngine {
    /// Schedules a callback (``ScheduledCallback``): one entry in the store and nothing else.
    func schedule(_ work: consuming TimerWork, deadline: Int64, slack: Int64) throws(TimerError) -> (index: Int32, sequence: UInt32) {
        var pending = Optional(work)  // moved into the store below, without a retain
        guard policy.shardsCallbacks else {
            return try state.withLock { (state) throws(TimerError) in
                guard !state.isShutDown else { throw .clockShutDown }
                let sequence = UInt32(truncatingIfNeeded: state.nextTimerID)
                state.nextTimerID &+= 1
                let index = state.store.insert(pending.take()!, deadline: deadline, slack: aimedSlack(slack, latency: state.wakeUpLatency), sequence: sequence)
                armIfEarlier(state.store.key(at: index))
                return (index, sequence)
            }
        }
        let number = Int(ctk_thread_slot()) & shardMask
        let aimed = aimedSlack(slack, latency: currentWakeUpLatency)
        let stored = shardStates[number]._withUnsafeGuaranteedRef { shardState in
            shardState.withLock { shard -> (raw: Int32, sequence: UInt32, key: Int64)? in
                guard !shard.isShutDown else { return nil }
                let sequence = shard.nextSequence
                shard.nextSequence &+= 1
                let raw = shard.store.insert(pending.take()!, deadline: deadline, slack: aimed, sequence: sequence)
                return (raw, sequence, shard.store.key(at: raw))
            }
        }
        guard let (raw, sequence, key) = stored else { throw .clockShutDown }
        armIfEarlier(key)
        return (CallbackShard.encode(raw, shard: number + 1), sequence)
    }

    /// The shard that holds a callback's index, and its index there; `nil` for the engine's store.
    @inline(__always)
    func shard(of index: Int32) -> (shard: Unmanaged<Locked<CallbackShard.State>>, raw: Int32)? {
        guard shardMask >= 0, index >= 0 else { return nil }
        let (number, raw) = CallbackShard.decode(index)
        guard number > 0, number <= shardMask + 1 else { return nil }
        return (shardStates[number - 1], raw)
    }

    /// Cancels a callback whose run has not begun — waiting for its deadline, or due and on its way
    /// to its target (C8); `false` if its run has begun, it was cancelled, or its clock shut down.
    /// Its closure is released before this returns, outside the lock.
    func cancel(_ index: Int32, sequence: UInt32) -> Bool {
        let work: TimerWork?
        if let (shard, raw) = shard(of: index) {
            work = shard._withUnsafeGuaranteedRef { $0.withLock { $0.store.cancelCallback(raw, sequence: sequence) } }
        } else {
            work = state.withLock { $0.store.cancelCallback(index, sequence: sequence) }
        }
        return work != nil
    }

    /// Moves a callback that is still waiting for its deadline to `deadline`, in place (no entry
    /// freed or allocated); `false` once it is due and handed to its delivery, has run, was
    /// cancelled, or its clock shut down.
    func move(_ index: Int32, sequence: UInt32, to deadline: Int64) -> Bool {
        let key: Int64?
        if let (shard, raw) = shard(of: index) {
            key = shard._withUnsafeGuaranteedRef { $0.withLock { $0.isShutDown ? nil : $0.store.moveCallback(raw, sequence: sequence, deadline: deadline) } }
        } else {
            key = state.withLock { $0.isShutDown ? nil : $0.store.moveCallback(index, sequence: sequence, deadline: deadline) }
        }
        guard let key else { return false }
        // The store is updated first: a wake-up that reset `armed` meanwhile sees the new key.
        armIfEarlier(key)
        return true
    }

    /// Whether a callback's run has not begun and still can.
    func isPending(_ index: Int32, sequence: UInt32) -> Bool {
        if let (shard, raw) = shard(of: index) {
            return shard._withUnsafeGuaranteedRef { $0.withLock { $0.store.callbackState(raw, sequence: sequence) == .pending } }
        }
        return state.withLock { $0.store.callbackState(index, sequence: sequence) == .pending }
    }

    /// Returns once the callback's run, if one is under way, has returned.
    func waitForRun(ofCallback index: Int32, sequence: UInt32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits: Bool
            if let (shard, raw) = shard(of: index) {
                waits = shard.takeUnretainedValue().withLock { shard -> Bool in
                    guard shard.store.callbackState(raw, sequence: sequence) == .running else { return false }
                    shard.callbackWaiters[raw, default: []].append(continuation)
                    return true
                }
            } else {
                waits = state.withLock { state -> Bool in
                    guard state.store.callbackState(index, sequence: sequence) == .running else { return false }
                    state.callbackWaiters[index, default: []].append(continuation)
                    return true
                }
            }
            if !waits { continuation.resume() }
        }
    }

    /// Frees the entry of a callback whose delivery is over, and resumes whoever waits for it.
    func release(_ index: Int32) {
        let waiters: [CheckedContinuation<Void, Never>]?
        if let (shard, raw) = shard(of: index) {
            waiters = shard._withUnsafeGuaranteedRef {
                $0.withLock { shard in
                    shard.store.releaseDelivered(raw)
                    return shard.callbackWaiters.isEmpty ? nil : shard.callbackWaiters.removeValue(forKey: raw)
                }
            }
        } else {
            waiters = state.withLock { state in
                state.store.releaseDelivered(index)
                return state.callbackWaiters.isEmpty ? nil : state.callbackWaiters.removeValue(forKey: index)
            }
        }
        for waiter in waiters ?? [] { waiter.resume() }
    }

    /// Frees the entries of callbacks whose delivery is over, and resumes whoever waits for them.
    func release(_ indices: [Int32]) {
        guard !indices.isEmpty else { return }
        guard policy.shardsCallbacks else {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                for index in indices { state.store.releaseDelivered(index) }
                guard !state.callbackWaiters.isEmpty else { return [] }
                return indices.flatMap { state.callbackWaiters.removeValue(forKey: $0) ?? [] }
            }
            for waiter in waiters { waiter.resume() }
            return
        }
        // One lock per shard that holds any of them.
        for (number, shard) in shards.enumerated() {
            let raws = indices.compactMap { index -> Int32? in
                let (owner, raw) = CallbackShard.decode(index)
                return owner == number + 1 ? raw : nil
            }
            guard !raws.isEmpty else { continue }
            let waiters = shard.state.withLock { shard -> [CheckedContinuation<Void, Never>] in
                for raw in raws { shard.store.releaseDelivered(raw) }
                guard !shard.callbackWaiters.isEmpty else { return [] }
                return raws.flatMap { shard.callbackWaiters.removeValue(forKey: $0) ?? [] }
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Runs a due callback if it can still be claimed, then frees its entry. Returns the number of
    /// runs (0 or 1).
    @discardableResult
    func runAndRelease(_ ticket: CallbackTicket) -> Int {
        let ran = Self.run(ticket)
        release(ticket.index)
        return ran
    }

    /// Claims a due callback and runs it; its closure is released when the run returns.
    @inline(__always) @discardableResult
    static func run(_ ticket: CallbackTicket) -> Int {
        guard let work = ticket.claim() else { return 0 }
        work.runCallback()
        return 1
    }
}
