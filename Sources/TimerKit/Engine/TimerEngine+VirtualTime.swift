/// Virtual time: a clock that moves only when told (`VirtualClock` in TimerKitTesting, through
/// `TimerClock`'s `_`-prefixed SPI). It runs the same store, the same state machine and the same
/// delivery as a system clock; ``EngineTimePolicy/virtual`` makes it deterministic — each fire at
/// its deadline, every delivery done before `advance` returns, ties in creation order.
extension TimerEngine {
    /// A virtual clock's instant and whether it is being advanced. Kept in the engine's one shard,
    /// guarded by its lock.
    struct VirtualTime {
        /// The current instant, in nanoseconds.
        var now: Int64
        /// Whether the clock is being advanced (advancing is not reentrant).
        var isAdvancing = false
    }

    /// Moves a virtual clock to `target`, firing every timer due on the way in (deadline, creation)
    /// order, with the clock set to each deadline before its timer fires. Never moves backwards.
    /// Returns the number of handler runs.
    ///
    /// With `jumping`, the clock is set to `target` first, as if nothing could run on the way (a
    /// machine asleep, a blocked thread): each due timer then fires once at `target`, and its
    /// missed-deadline policy decides what the deadlines it missed mean (C5).
    @discardableResult
    func advance(to target: Int64, maxFires: Int = .max, jumping: Bool = false) -> Int {
        precondition(isVirtual, "TimerEngine.advance(to:): only a virtual clock can be advanced")
        let home = shards[0].state
        home.withLock { home in
            precondition(!home.virtualTime.isAdvancing, "VirtualClock: advance was called from a timer handler while the clock was already advancing")
            home.virtualTime.isAdvancing = true
            if jumping { home.virtualTime.now = max(home.virtualTime.now, target) }
        }
        defer { home.withLock { $0.virtualTime.isAdvancing = false } }
        var fires = 0
        while fires < maxFires {
            let next = home.withLock { home -> TimerStore.DueWork? in
                guard let (work, deadline) = home.store.takeFirst(dueBy: target) else { return nil }
                home.virtualTime.now = max(home.virtualTime.now, deadline)
                wakeUps.add(1, ordering: .relaxed)
                if case .timer(let timer) = work {
                    timer.storeSlot = -1
                    timer.machine.takeForDelivery()
                }
                return work  // the one shard's raw index is the callback's index
            }
            guard let next else { break }
            fires += deliver(next)
        }
        home.withLock { home in
            if fires < maxFires { home.virtualTime.now = max(home.virtualTime.now, target) }
        }
        return fires
    }

    /// The earliest pending deadline of a virtual clock, or `nil` when no deadline will ever come
    /// (`Int64.max` is the end of time).
    var earliestDeadline: Int64? {
        shards[0].state.withLock { home in
            home.store.firstDeadline().flatMap { $0 == .max ? nil : $0 }
        }
    }
}
