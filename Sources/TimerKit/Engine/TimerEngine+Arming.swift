import Synchronization

/// Holding deadlines: a timer's place in its shard's store, and arming the driver for the earliest
/// key. Every function here runs under the lock of the timer's shard, except the arming itself,
/// which any thread may do after storing a key.
extension TimerEngine {
    /// Carries out what a transition of a timer's state machine asks of its place in the store
    /// (``TimerStateMachine/StoreAction``). Under the lock. Returns whether the caller now holds
    /// the timer's delivery and must hand it over (``deliver(_:)-(ScheduledTimer)``) once the lock
    /// is let go.
    @inline(__always)
    func carryOut(_ action: TimerStateMachine.StoreAction, for timer: ScheduledTimer, _ shard: inout EngineShard.State) -> Bool {
        switch action {
        case .none:
            return false
        case .place:
            place(timer, &shard)
            return false
        case .remove:
            removeIfStored(timer, &shard)
            return false
        case .deliver:
            removeIfStored(timer, &shard)
            return true
        }
    }

    /// Puts a timer in the store under its next deadline, for a timer that is active, not
    /// suspended, not running and not stored.
    func insert(_ timer: ScheduledTimer, _ shard: inout EngineShard.State) {
        let (deadline, slack) = storedDeadline(timer)
        let index = shard.store.insert(.timer(timer), deadline: deadline, slack: slack, sequence: timer.id)
        timer.storeSlot = index
        armIfEarlier(shard.store.key(at: index))
    }

    /// Puts a timer at its (new) next deadline: moves its entry in place if it has one, else
    /// inserts one.
    func place(_ timer: ScheduledTimer, _ shard: inout EngineShard.State) {
        guard timer.storeSlot >= 0 else { return insert(timer, &shard) }
        let (deadline, slack) = storedDeadline(timer)
        shard.store.move(timer.storeSlot, deadline: deadline, slack: slack)
        armIfEarlier(shard.store.key(at: timer.storeSlot))
    }

    /// Takes a timer out of the store if it is there. The driver stays armed: a wake-up for a
    /// cancelled timer finds nothing due and re-arms, which is cheaper than a system call on every
    /// cancel.
    func removeIfStored(_ timer: ScheduledTimer, _ shard: inout EngineShard.State) {
        if timer.storeSlot >= 0 {
            _ = shard.store.remove(timer.storeSlot)
            timer.storeSlot = -1
        }
    }

    /// The deadline and slack a timer is stored under: its next deadline and aimed tolerance (C3);
    /// for a high-precision timer on a system clock, its next deadline less the spin lead, so that
    /// the driver wakes in time to wait for the deadline actively (``deliverPrecisely(_:)``).
    @inline(__always)
    private func storedDeadline(_ timer: ScheduledTimer) -> (deadline: Int64, slack: Int64) {
        let deadline = timer.machine.nextDeadline
        guard timer.isPrecise, policy.hasDriver, deadline != .max else {
            return (deadline, aimedSlack(timer.toleranceNanoseconds, latency: currentWakeUpLatency))
        }
        return (deadline.addingSaturating(-currentWakeUpLatency.spinLead), 0)
    }

    /// How far into a tolerance window the engine aims (C3): short of its end by the driver's
    /// wake-up latency; a virtual clock fires at the deadline itself.
    @inline(__always)
    func aimedSlack(_ tolerance: Int64, latency: WakeUpLatency) -> Int64 {
        policy.hasDriver ? latency.aimedSlack(tolerance) : 0
    }

    /// Learns how late the driver woke after the instant it was armed for (C3). On the driver's
    /// thread.
    @inline(__always)
    func recordWakeUp(now: Int64, armedFor armed: Int64) {
        if wakeUpLatency.record(wokeAt: now, armedFor: armed) {
            wakeUpLatencyMirror.store(wakeUpLatency.nanoseconds, ordering: .relaxed)
        }
    }

    /// The driver's wake-up latency, read without the lock.
    @inline(__always)
    var currentWakeUpLatency: WakeUpLatency {
        WakeUpLatency(nanoseconds: wakeUpLatencyMirror.load(ordering: .relaxed))
    }

    // MARK: Arming the driver

    /// Arms the driver for `key` if it comes before the instant it is armed for. Safe from any
    /// thread; the caller has stored the entry first, so a wake-up that reset ``armed`` meanwhile
    /// either sees the entry or is followed by this arming.
    @inline(__always)
    func armIfEarlier(_ key: Int64) {
        guard policy.hasDriver else { return }  // not `driver != nil`: that copies the existential, a retain and a release
        var current = armed.load(ordering: .acquiring)
        while key < current {
            let (exchanged, original) = armed.compareExchange(expected: current, desired: key, ordering: .acquiringAndReleasing)
            if exchanged { return armDriver() }
            current = original
        }
    }

    /// Arms the driver for the current value of ``armed``: the last of concurrent callers arms for
    /// the lowest value any of them stored.
    private func armDriver() {
        guard let driver else { return }
        armLock.withLock { _ in
            let deadline = armed.load(ordering: .acquiring)
            if deadline != .max { driver.arm(at: deadline) }
        }
    }

    /// Wakes the driver at once (a yield, a shutdown).
    func armNow() {
        armed.store(1, ordering: .releasing)
        armDriver()
    }
}
