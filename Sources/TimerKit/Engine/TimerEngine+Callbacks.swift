import CTimerKitShims
import Synchronization

/// Callbacks (``ScheduledCallback``): one entry each, in the shard of the scheduling thread
/// (``EngineShard``); cancelled and moved by index and sequence in O(1), run at most once (C8),
/// their entries freed after the delivery.
extension TimerEngine {
    /// Schedules a callback (``ScheduledCallback``): one entry in the store and nothing else.
    func schedule(_ work: consuming TimerWork, deadline: Int64, slack: Int64) throws(TimerError) -> (index: Int32, sequence: UInt32) {
        var pending = Optional(work)  // moved into the store below, without a retain
        let number = currentShard
        let aimed = aimedSlack(slack, latency: currentWakeUpLatency)
        let stored = withShard(number) { shard -> (raw: Int32, sequence: UInt32, key: Int64)? in
            guard !shard.isShutDown else { return nil }
            let sequence = shard.nextSequence
            shard.nextSequence &+= 1
            let raw = shard.store.insert(pending.take()!, deadline: deadline, slack: aimed, sequence: sequence)
            return (raw, sequence, shard.store.key(at: raw))
        }
        guard let (raw, sequence, key) = stored else { throw .clockShutDown }
        armIfEarlier(key)
        return (EngineShard.encode(raw, shard: number), sequence)
    }

    /// Runs `body` under the lock of the shard that holds a callback's index, with its index there;
    /// `otherwise` for an index no shard of this engine hands out.
    @inline(__always)
    func withShard<Result>(ofCallback index: Int32, otherwise: Result, _ body: (inout EngineShard.State, Int32) -> Result) -> Result {
        let (number, raw) = EngineShard.decode(index)
        guard index >= 0, number <= shardMask else { return otherwise }
        return withShard(number) { body(&$0, raw) }
    }

    /// Cancels a callback whose run has not begun — waiting for its deadline, or due and on its way
    /// to its target (C8); `false` if its run has begun, it was cancelled, or its clock shut down.
    /// Its closure is released before this returns, outside the lock.
    func cancel(_ index: Int32, sequence: UInt32) -> Bool {
        // The closure comes out of the lock, to be released here.
        let work = withShard(ofCallback: index, otherwise: nil) { shard, raw in shard.store.cancelCallback(raw, sequence: sequence) }
        return work != nil
    }

    /// Moves a callback that is still waiting for its deadline to `deadline`, in place (no entry
    /// freed or allocated); `false` once it is due and handed to its delivery, has run, was
    /// cancelled, or its clock shut down.
    func move(_ index: Int32, sequence: UInt32, to deadline: Int64) -> Bool {
        let key = withShard(ofCallback: index, otherwise: nil) { shard, raw in
            shard.isShutDown ? nil : shard.store.moveCallback(raw, sequence: sequence, deadline: deadline)
        }
        guard let key else { return false }
        // The store is updated first: a wake-up that reset `armed` meanwhile sees the new key.
        armIfEarlier(key)
        return true
    }

    /// Whether a callback's run has not begun and still can.
    func isPending(_ index: Int32, sequence: UInt32) -> Bool {
        withShard(ofCallback: index, otherwise: false) { shard, raw in shard.store.callbackState(raw, sequence: sequence) == .pending }
    }

    /// Returns once the callback's run, if one is under way, has returned.
    func waitForRun(ofCallback index: Int32, sequence: UInt32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits =
                withShard(ofCallback: index, otherwise: false) { shard, raw -> Bool in
                    guard shard.store.callbackState(raw, sequence: sequence) == .running else { return false }
                    shard.callbackWaiters[raw, default: []].append(continuation)
                    return true
                }
            if !waits { continuation.resume() }
        }
    }

    /// Frees the entry of a callback whose delivery is over, and resumes whoever waits for it.
    func release(_ index: Int32) {
        let waiters = withShard(ofCallback: index, otherwise: nil) { shard, raw in
            shard.store.releaseDelivered(raw)
            return shard.callbackWaiters.isEmpty ? nil : shard.callbackWaiters.removeValue(forKey: raw)
        }
        for waiter in waiters ?? [] { waiter.resume() }
    }

    /// Frees the entries of callbacks whose delivery is over, and resumes whoever waits for them:
    /// one lock per shard that holds any of them. Allocates nothing: a wake-up's batch of hundreds
    /// would otherwise ask malloc for a large block per shard, and a large request makes glibc
    /// consolidate every small block freed since (the batch's closures) — measured at 14 % of the
    /// engine thread's time with a million one-shots at 1 ms of tolerance.
    func release(_ indices: [Int32]) {
        guard !indices.isEmpty else { return }
        if indices.count == 1 { return release(indices[0]) }
        for number in 0...shardMask where indices.contains(where: { EngineShard.decode($0).shard == number }) {
            let waiters = withShard(number) { shard -> [CheckedContinuation<Void, Never>] in
                for index in indices {
                    let (owner, raw) = EngineShard.decode(index)
                    if owner == number { shard.store.releaseDelivered(raw) }
                }
                guard !shard.callbackWaiters.isEmpty else { return [] }
                var waiting: [CheckedContinuation<Void, Never>] = []
                for index in indices {
                    let (owner, raw) = EngineShard.decode(index)
                    if owner == number, let waiters = shard.callbackWaiters.removeValue(forKey: raw) { waiting += waiters }
                }
                return waiting
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
