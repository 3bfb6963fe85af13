import Dispatch

/// Delivery: due work handed to its targets — engine-thread work run in order on the driver's
/// thread, queue work in one hop per queue — and a timer's runs decided by its state machine
/// (``drain(_:)``). Decisions are made under the lock; handlers run outside it, through the
/// timer's ``RunGate`` (C8).
extension TimerEngine {
    /// Hands due work to its delivery targets: engine-thread work runs here, in order; work for a
    /// queue goes there in one hop per queue.
    func deliver(_ due: [TimerStore.DueWork]) {
        guard !due.isEmpty else { return }
        if due.count == 1 {
            deliver(due[0])
            return
        }
        var byQueue: [ObjectIdentifier: (queue: DispatchQueue, works: [TimerStore.DueWork])] = [:]
        var finished = finishedBuffer
        finishedBuffer = []
        for work in due {
            switch work {
            case .callback(let ticket):
                if let queue = ticket.queue {
                    byQueue[ObjectIdentifier(queue), default: (queue, [])].works.append(work)
                } else {
                    Self.run(ticket)
                    finished.append(ticket.index)
                }
            case .timer(let timer):
                switch timer.delivery.target {
                case .engineThread:
                    drain(timer)
                case .queue(let queue):
                    byQueue[ObjectIdentifier(queue), default: (queue, [])].works.append(work)
                }
            }
        }
        release(finished)
        finished.removeAll(keepingCapacity: true)
        finishedBuffer = finished
        for (queue, works) in byQueue.values {
            queue.async {
                var finished: [Int32] = []
                for work in works {
                    switch work {
                    case .timer(let timer):
                        self.drain(timer)
                    case .callback(let ticket):
                        Self.run(ticket)
                        finished.append(ticket.index)
                    }
                }
                self.release(finished)
            }
        }
    }

    /// Hands one piece of due work to its delivery target; on a virtual clock it runs before this
    /// returns. Returns the number of runs made before it returned.
    @discardableResult
    func deliver(_ work: TimerStore.DueWork) -> Int {
        switch work {
        case .timer(let timer):
            return deliver(timer)
        case .callback(let ticket):
            guard let queue = ticket.queue else { return runAndRelease(ticket) }
            guard policy.deliversInline else {
                queue.async { self.runAndRelease(ticket) }
                return 0
            }
            return runNow(on: queue) { runAndRelease(ticket) }
        }
    }

    /// Runs `body` on `queue` before returning (a virtual clock's delivery): directly when that is
    /// the main queue and the caller is on it, else with `sync` (which, onto the queue the caller is
    /// on, would deadlock). The main queue is recognized as ``TimerDelivery`` recognizes it: on Linux
    /// each read of `DispatchQueue.main` is a new object, and the main queue's blocks may run on
    /// threads other than the main thread.
    private func runNow<Result>(on queue: DispatchQueue, _ body: () -> Result) -> Result {
        if TimerDelivery.isMain(queue) && TimerDelivery.isOnMainQueue { return body() }
        return queue.sync(execute: body)
    }

    /// Hands one timer, already marked running, to its delivery target.
    ///
    /// On a virtual clock the run happens before this returns, on the calling thread (or
    /// synchronously on the timer's queue), so that advancing the clock is deterministic.
    /// Returns the number of handler runs made before it returned.
    @discardableResult
    func deliver(_ timer: ScheduledTimer) -> Int {
        switch timer.delivery.target {
        case .engineThread:
            return drain(timer)
        case .queue(let queue):
            guard policy.deliversInline else {
                queue.async { self.drain(timer) }
                return 0
            }
            return runNow(on: queue) { drain(timer) }
        }
    }

    /// What the holder of a timer's delivery does next, outside the lock: the machine's
    /// ``TimerStateMachine/Step`` with what acting on it takes (the handler, the hook).
    enum DeliveryStep {
        /// Run the handler once, then ask again.
        case run(ScheduledTimer.Handler, TimerFire)
        /// Run the handler for the last time, then call the invalidation hook.
        case runFinal(ScheduledTimer.Handler, TimerFire, (@Sendable () -> Void)?)
        /// The delivery is over.
        case stop
        /// More to run, but the delivery used its budget: continue in a later turn.
        case yield
        /// The timer was found invalid (its clock shut down): release the handler, call the hook.
        case stopInvalidated((@Sendable () -> Void)?, ScheduledTimer.Handler?)
    }

    /// Runs a timer's handler as many times as its state machine says, then puts the timer back in
    /// the store (or lets it go). Runs of one timer never overlap (C14): only the holder of the
    /// timer's delivery (the machine is running) calls this.
    /// Returns the number of handler runs it made.
    @discardableResult
    func drain(_ timer: ScheduledTimer) -> Int {
        var runs = 0
        while true {
            let step = withShard(Int(timer.shard)) { shard in nextDeliveryStep(timer, afterRuns: runs, &shard) }
            switch step {
            case .run(let handler, let fire):
                runs += runGated(timer, handler, fire)
            case .runFinal(let handler, let fire, let onInvalidate):
                runs += runGated(timer, handler, fire)
                onInvalidate?()
                return runs
            case .stop:
                return runs
            case .yield:
                if case .queue(let queue) = timer.delivery.target {
                    queue.async { self.drain(timer) }
                }
                return runs
            case .stopInvalidated(let onInvalidate, let released):
                _ = released
                onInvalidate?()
                return runs
            }
        }
    }

    /// Asks the timer's machine for its next step and carries out what needs the lock: a store
    /// insert for a timer that is not due, the run gate's decision for a run, the handler's
    /// release for a final run or an invalidation. Under the lock of the timer's shard.
    @inline(__always)
    func nextDeliveryStep(_ timer: ScheduledTimer, afterRuns runs: Int, _ shard: inout EngineShard.State) -> DeliveryStep {
        let now = now(shard)
        if runs >= Self.runBudget && policy.yieldsAfterBudget && timer.machine.hasWork(now: now) {
            return yieldTurn(timer, &shard)
        }
        let isShutDown = shard.isShutDown
        switch timer.transition({ $0.nextStep(now: now, isShutDown: isShutDown) }) {
        case .run(let fire):
            guard let handler = timer.handler else { preconditionFailure("TimerEngine: an active timer without its handler") }
            timer.runGate.decide()
            return .run(handler, TimerFire(fire, kind: kind))
        case .runFinal(let fire):
            let (handler, hook) = timer.releaseHandler()
            guard let handler else { preconditionFailure("TimerEngine: an active timer without its handler") }
            timer.runGate.decide()
            return .runFinal(handler, TimerFire(fire, kind: kind), hook)
        case .store:
            insert(timer, &shard)
            return .stop
        case .park:
            return .stop
        case .invalidated:
            let (released, hook) = timer.releaseHandler()
            return .stopInvalidated(hook, released)
        }
    }

    /// Runs a decided run unless `invalidate()` stopped it before it began (C8); returns the number
    /// of handler runs (0 or 1).
    @inline(__always)
    private func runGated(_ timer: ScheduledTimer, _ handler: ScheduledTimer.Handler, _ fire: TimerFire) -> Int {
        guard timer.runGate.begin() else {
            withShard(Int(timer.shard)) { _ in timer.runGate.abandon() }
            return 0
        }
        handler(timer, fire)
        timer.endRun()
        return 1
    }

    /// Gives up a running timer's turn: its delivery stays held and continues later — on the
    /// engine thread at the next wake-up (armed for now), on a queue in a new block.
    private func yieldTurn(_ timer: ScheduledTimer, _ shard: inout EngineShard.State) -> DeliveryStep {
        if case .engineThread = timer.delivery.target {
            shard.ready.append(timer)
            armNow()
        }
        return .yield
    }
}
