import AsyncAlgorithms

/// swift-async-algorithms' `AsyncTimerSequence` on `ContinuousClock`, iterated by one task per
/// timer. The sequence keeps its own grid (each deadline is the previous one plus the interval,
/// starting from `clock.now` at the first `next()`), so its deadlines are known: the peer reads the
/// clock right before the iteration starts and counts intervals from there.
///
/// It has no one-shot form and no handle to cancel one (a one-shot would be a task around
/// `Task.sleep`, which is `task-sleep`), so churn and scale are n/a.
final class AsyncTimerSequencePeer: Peer {
    typealias OneShot = Never

    static let name = "async-timer-sequence"
    static let capabilities: Capabilities = [.repeating, .tolerance, .blockable, .manyRepeating]
    static let limitations =
        "async-timer-sequence: churn and scale n/a (a repeating sequence with no one-shot form or cancellable handle; its one-shot equivalent is task-sleep)"

    let origin = ContinuousClock.now
    let blocked = BlockedActor()

    init() {}

    @inline(__always) func now() -> Int64 { (ContinuousClock.now - origin).nanoseconds }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        let until = origin.advanced(by: .nanoseconds(deadline))
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
            // Start the sequence one interval before `first`, so that its first deadline is close to it.
            do { try await Task.sleep(until: origin.advanced(by: .nanoseconds(first - interval)), clock: .continuous) } catch { return }
            let timers = AsyncTimerSequence(
                interval: .nanoseconds(interval), tolerance: tolerance > 0 ? .nanoseconds(tolerance) : nil, clock: ContinuousClock())
            let start = now()
            var k: Int64 = 1
            for await _ in timers {
                let scheduled = start + k * interval
                switch delivery {
                case .standard: handler(Tick(now: now(), scheduled: scheduled))
                case .blockable: await blocked.run { handler(Tick(now: self.now(), scheduled: scheduled)) }
                }
                k += 1
            }
        }
        return Repeater { task.cancel() }
    }
}
