/// One `Task` per timer, sleeping with `Task.sleep(until:tolerance:clock: .continuous)`. A
/// repeating timer is a loop over its own grid (`first + k·interval`), so it cannot drift; late
/// deadlines are fired back to back. Its blockable context is an actor the handler is run on.
final class TaskSleepPeer: Peer {
    typealias OneShot = Task<Void, Never>

    static let name = "task-sleep"
    static let capabilities: Capabilities = [.oneShot, .anyThread, .repeating, .tolerance, .blockable, .manyRepeating]

    let clock = ContinuousClock()
    let origin = ContinuousClock.now
    let blocked = BlockedActor()

    init() {}

    /// Nanoseconds since `origin` on `ContinuousClock`.
    @inline(__always) func now() -> Int64 { (ContinuousClock.now - origin).nanoseconds }

    @inline(__always) func instant(_ nanoseconds: Int64) -> ContinuousClock.Instant {
        origin.advanced(by: .nanoseconds(nanoseconds))
    }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> Task<Void, Never> {
        let until = instant(deadline)
        return Task { [self] in
            do { try await Task.sleep(until: until, clock: .continuous) } catch { return }
            log.fired(id, at: now())
        }
    }

    func cancel(_ timer: Task<Void, Never>) { timer.cancel() }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        let until = instant(deadline)
        Task { [blocked] in
            try? await Task.sleep(until: until, clock: .continuous)
            switch delivery {
            case .standard: work()
            case .blockable: await blocked.run(work)
            }
        }
    }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let task = Task { [self] in
            var deadline = first
            while true {
                do {
                    try await Task.sleep(until: instant(deadline), tolerance: tolerance > 0 ? .nanoseconds(tolerance) : nil, clock: .continuous)
                } catch { return }
                let scheduled = deadline
                switch delivery {
                case .standard: handler(Tick(now: now(), scheduled: scheduled))
                case .blockable: await blocked.run { handler(Tick(now: self.now(), scheduled: scheduled)) }
                }
                deadline += interval
            }
        }
        return Repeater { task.cancel() }
    }
}

/// The blockable context of the Swift-concurrency peers: work sent here runs on the actor, one
/// piece at a time.
actor BlockedActor {
    func run(_ work: @Sendable () -> Void) { work() }
}
