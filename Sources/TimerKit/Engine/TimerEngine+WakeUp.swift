import CTimerKitShims
import Synchronization

/// Waking up: the driver's call into a system clock's engine. One wake-up takes what is due from
/// every shard, merges it in deadline order, hands it to the
/// delivery (`TimerEngine+Delivery.swift`), waits actively for high-precision deadlines, and arms
/// the driver for the earliest key left.
extension TimerEngine {
    /// Fires every due timer. Called by the driver when it wakes; returns `false` once the engine is
    /// shut down, telling the driver to stop.
    ///
    /// The engine wakes at the earliest *latest-acceptable* instant (deadline + tolerance, less its
    /// wake-up latency and the time its deliveries take: ``DeliveryReserve``) and then takes every
    /// timer whose deadline has come, so timers whose tolerance windows overlap share the wake-up
    /// (C3), and none fires before its deadline (C2).
    func serviceDueTimers() -> Bool {
        // The driver calls this from one thread (or one serial queue) at a time, so the buffer of
        // due timers is reused from wake-up to wake-up: no allocation on the common path.
        var due = dueBuffer
        dueBuffer = []
        var precise = preciseBuffer
        preciseBuffer = []
        defer {
            due.removeAll(keepingCapacity: true)
            dueBuffer = due
            preciseBuffer = precise
        }
        // Work that comes due while a pass delivers is served by another pass right away, without
        // the two system calls of arming the driver and waking from it (under a burst of deadlines
        // they were most of the engine thread's time). The passes are bounded, so that the driver
        // still gets its turn.
        for pass in 0..<Self.passesPerWakeUp {
            let now = SystemClock.now(kind)
            // From here on, a thread that stores an earlier key arms the driver itself; what is
            // stored before a store is looked at below is seen there.
            let armedFor = armed.exchange(.max, ordering: .acquiringAndReleasing)
            guard !hasShutDown.load(ordering: .acquiring) else { return false }
            if pass == 0 { wakeUps.add(1, ordering: .relaxed) }
            let next = takeDueWork(by: now, into: &due, precise: &precise)
            if pass == 0 {
                // The wake-up's latency as the handlers will see it: up to now, with the stores
                // taken out — what the engine keeps back from the end of a window (C3).
                recordWakeUp(now: SystemClock.now(kind), armedFor: armedFor)
            }
            // Due already, or due sooner than the driver could sleep and wake again: the next pass
            // serves it, after waiting for it here. Otherwise arm for the earliest key, unless a
            // thread that stored an earlier one meanwhile has armed for that.
            let again =
                (!due.isEmpty || !precise.isEmpty) && pass + 1 < Self.passesPerWakeUp
                && next <= SystemClock.now(kind) + currentWakeUpLatency.nearWindow
            if !again { armIfEarlier(next) }
            if !due.isEmpty {
                deliver(due)
                // A lone fire began at once, whatever its handler then took: only a batch's time
                // delays fires in it.
                deliveryReserve.record(due.count > 1 ? SystemClock.now(kind) - now : 0)
            }
            due.removeAll(keepingCapacity: true)
            if !precise.isEmpty { deliverPrecisely(&precise) }
            if !again { return true }
            while SystemClock.now(kind) < next { ctk_cpu_relax() }
        }
        return true
    }

    /// Waits actively for each high-precision timer's deadline, in deadline (then creation) order,
    /// and delivers it the moment its deadline has come (never before: C2). Runs on the driver's
    /// thread after the wake-up's other due work, whose deadlines came before these.
    private func deliverPrecisely(_ timers: inout [(timer: ScheduledTimer, deadline: Int64)]) {
        if timers.count > 1 {
            timers.sort { $0.deadline < $1.deadline || ($0.deadline == $1.deadline && Int32(bitPattern: $0.timer.id &- $1.timer.id) < 0) }
        }
        for (timer, deadline) in timers {
            while SystemClock.now(kind) < deadline { ctk_cpu_relax() }
            deliver(timer)
        }
        preciseWaits.add(timers.count, ordering: .relaxed)
        timers.removeAll(keepingCapacity: true)
    }

    /// Takes everything due by `now` out of the shards into `due` — first the timers whose turn has
    /// come again (``EngineShard/State/ready``), then the rest merged in deadline order, each
    /// shard's own order kept — and the high-precision timers due soon into `precise`; returns the
    /// earliest wake-up the shards need.
    private func takeDueWork(by now: Int64, into due: inout [TimerStore.DueWork], precise: inout [(timer: ScheduledTimer, deadline: Int64)]) -> Int64 {
        var next = Int64.max
        let reserve = deliveryReserve.nanoseconds
        var sources: [Range<Int>] = []
        var collected = shardDue
        shardDue = []
        for (number, shard) in shards.enumerated() {
            let start = collected.count
            let shardNext = shard.state.withLock { shard -> Int64 in
                guard !shard.isShutDown else { return .max }
                for timer in shard.ready { collected.append((.timer(timer), .min)) }  // their turn has come: first
                shard.ready.removeAll(keepingCapacity: true)
                while let (work, deadline) = shard.store.takeFirst(dueBy: now) {
                    switch work {
                    case .timer(let timer):
                        timer.storeSlot = -1
                        timer.machine.takeForDelivery()
                        if timer.isPrecise && timer.machine.nextDeadline > now {
                            precise.append((timer, timer.machine.nextDeadline))
                            continue
                        }
                        collected.append((work, deadline))
                    case .callback(let ticket):
                        let encoded = CallbackTicket(index: EngineShard.encode(ticket.index, shard: number), entry: ticket.entry, queue: ticket.queue)
                        collected.append((.callback(encoded), deadline))
                    }
                }
                return shard.store.wakeUpTime(now: now, reserve: reserve) ?? .max
            }
            next = min(next, shardNext)
            if collected.count > start { sources.append(start..<collected.count) }
        }
        defer {
            collected.removeAll(keepingCapacity: true)
            shardDue = collected
        }
        if sources.count == 1 {
            for item in collected { due.append(item.work) }
            return next
        }
        // A k-way merge of the shards' due work, by deadline.
        var heads = sources.map(\.lowerBound)
        while true {
            var best = -1
            var bestDeadline = Int64.max
            for (source, range) in sources.enumerated() where heads[source] < range.upperBound {
                let deadline = collected[heads[source]].deadline
                if best < 0 || deadline < bestDeadline {
                    best = source
                    bestDeadline = deadline
                }
            }
            if best < 0 { break }
            due.append(collected[heads[best]].work)
            heads[best] += 1
        }
        return next
    }
}
