import Foundation
import TimerKit

// What an operator asks and does: the run history, pauses, the instances alive, the counts.

extension DurableTimers {
    /// The most timers one write of a pause or resume of a handler (or of the namespace) changes.
    static let pauseBatch = 2_000

    // MARK: History

    /// The last runs of the timer under `key`, newest first: when each started, how late, how it
    /// ended, on which instance — kept per ``Options/history`` also after a one-shot is gone.
    ///
    /// - Parameters:
    ///   - key: The timer's key.
    ///   - limit: The most runs returned (at most what the history keeps per timer).
    public func history(key: String, limit: Int = 20) async throws(DurableTimerError) -> [DurableTimerRun] {
        guard DurableLimits.isValid(key: key) else { return [] }
        return try await store.history(namespace: namespace, key: key, limit: min(max(limit, 0), 10_000))
    }

    // MARK: Pausing

    /// Pauses the timer under `key`: no instance claims it until ``resume(key:)``. A run under way
    /// finishes; a repeating timer keeps its grid, and its misfire policy decides, at resume, what
    /// becomes of the occurrences that came meanwhile (as after an outage). Stored: every instance
    /// obeys. Returns `false` when no timer is stored under the key.
    @discardableResult
    public func pause(key: String) async throws(DurableTimerError) -> Bool {
        guard DurableLimits.isValid(key: key) else { return false }
        // An armed wake-up finds it held out at its claim, and lets it go.
        return try await store.pause(namespace: namespace, key: key)
    }

    /// Lets the timer under `key` run again (a timer that was parked when paused is parked
    /// again). Returns `false` when no timer is stored under the key, it is not paused, or its
    /// handler or the namespace is paused (it resumes with them).
    @discardableResult
    public func resume(key: String) async throws(DurableTimerError) -> Bool {
        guard DurableLimits.isValid(key: key), let record = try await store.resume(namespace: namespace, key: key) else { return false }
        if !record.isParked { learn { $0.load(StoredKey(key), readyAt: record.readyAt, handler: record.handler) } }
        return true
    }

    /// Pauses every timer of `handler`, and those scheduled for it until ``resume(handler:)``
    /// (they are stored paused). Stored: every instance obeys. The stored timers are paused in
    /// batches of a few thousand, each a short write, so instances keep running meanwhile.
    /// Returns how many timers it paused.
    @discardableResult
    public func pause(handler: String) async throws(DurableTimerError) -> Int {
        try DurableLimits.validate(key: handler)
        let paused = try await store.pause(namespace: namespace, handler: handler, now: now(), batch: Self.pauseBatch)
        await runner.refill()
        return paused
    }

    /// Resumes every paused timer of `handler` — those paused one by one too — unless the
    /// namespace is paused (then they resume with it). Returns how many timers it resumed.
    @discardableResult
    public func resume(handler: String) async throws(DurableTimerError) -> Int {
        try DurableLimits.validate(key: handler)
        let resumed = try await store.resume(namespace: namespace, handler: handler, batch: Self.pauseBatch)
        await runner.refill()
        return resumed
    }

    /// Pauses every timer of the namespace, and those scheduled in it until ``resumeNamespace()``.
    /// Returns how many timers it paused.
    @discardableResult
    public func pauseNamespace() async throws(DurableTimerError) -> Int {
        let paused = try await store.pause(namespace: namespace, handler: nil, now: now(), batch: Self.pauseBatch)
        await runner.refill()
        return paused
    }

    /// Resumes every paused timer of the namespace — those paused by key or by handler too: it
    /// removes the namespace's pause only; handlers paused on their own stay paused. Returns how many
    /// timers it resumed.
    @discardableResult
    public func resumeNamespace() async throws(DurableTimerError) -> Int {
        let resumed = try await store.resume(namespace: namespace, handler: nil, batch: Self.pauseBatch)
        await runner.refill()
        return resumed
    }

    /// The paused handlers, with when each was paused, and whether (since when) the namespace is.
    public func pauses() async throws(DurableTimerError) -> (handlers: [String: Date], namespace: Date?) {
        var handlers: [String: Date] = [:]
        var whole: Date?
        for pause in try await store.pauses(namespace: namespace) {
            if let handler = pause.handler {
                handlers[handler] = Date(nanosecondsSince1970: pause.since)
            } else {
                whole = Date(nanosecondsSince1970: pause.since)
            }
        }
        return (handlers, whole)
    }

    // MARK: Running now

    /// Runs the timer's next occurrence now, on whichever instance claims it first: it becomes
    /// ready at once, its occurrence unchanged — the run's ``DurableFire/scheduledDeadline`` is that
    /// occurrence, ahead of its time; a one-shot then ends, a repeating timer waits for the
    /// occurrence after it (its grid kept). Unlike ``fire(key:)`` it needs no handler registered
    /// here, and stands for the occurrence (``fire(key:)`` stands for none). A retrying timer is
    /// retried now.
    ///
    /// - Returns: `false` when no timer is stored under the key, or it is parked (``retry(key:)``
    ///   it), paused, running, or ready already.
    @discardableResult
    public func runNow(key: String) async throws(DurableTimerError) -> Bool {
        guard DurableLimits.isValid(key: key), let record = try await store.expedite(namespace: namespace, key: key, now: now()) else { return false }
        learn { $0.load(StoredKey(key), readyAt: record.readyAt, handler: record.handler) }
        return true
    }

    // MARK: Instances

    /// The runners of the namespace that recorded themselves (started, and not shut down), the
    /// most recently seen first; ``DurableInstance/isAlive(at:)`` tells those still running.
    public func instances() async throws(DurableTimerError) -> [DurableInstance] {
        try await store.instances(namespace: namespace)
    }

    // MARK: Counts

    /// The namespace's timers counted by handler and status, with the late repeating timers
    /// (their occurrence came more than `lateBy` ago and has not succeeded), the oldest due timer,
    /// the lateness of the runs of the last `window`, the instances and the pauses: what is
    /// scheduled and what is stuck, at a glance.
    public func stats(lateBy: Duration = .seconds(60), window: Duration = .seconds(3_600)) async throws(DurableTimerError) -> DurableTimerStats {
        let now = now()
        let counts = try await store.stats(
            namespace: namespace, now: now, lateBefore: now.addingSaturating(-max(lateBy, .zero).saturatingNanoseconds),
            since: now.addingSaturating(-max(window, .zero).saturatingNanoseconds))
        let pauses = try await store.pauses(namespace: namespace)
        return DurableTimerStats(
            namespace: namespace, taken: now, counts: counts, instances: try await store.instances(namespace: namespace),
            pausedHandlers: Set(pauses.compactMap(\.handler)), isNamespacePaused: pauses.contains { $0.handler == nil },
            clockOffset: .nanoseconds(store.clockOffset), lateBy: lateBy, window: window)
    }
}

extension DurableTimers {
    /// The payload stored under `key`, as its JSON (for the dashboard's timer page); `nil` when no
    /// timer is stored under it.
    package func payload(key: String) async throws(DurableTimerError) -> Data? {
        guard DurableLimits.isValid(key: key) else { return nil }
        return try await store.record(namespace: namespace, key: key)?.payload
    }
}
