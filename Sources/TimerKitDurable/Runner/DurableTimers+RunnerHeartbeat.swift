import Foundation
import TimerKit

// The runner's heartbeat: a periodic duty of its own, beside the machine's (the renewal tick, the
// sweep tick and the lease checks, which the machine arms as it needs them).
extension DurableTimers.Runner {
    /// How often this instance records itself alive: half the horizon, the interval its record
    /// declares (``DurableInstance``; one not seen for three of them has stopped).
    var heartbeatInterval: Int64 { max(context.options.horizon.saturatingNanoseconds / 2, 1_000_000) }

    /// Starts the heartbeat once the store is open: records this instance alive now and every
    /// ``heartbeatInterval`` until the runner stops, pruning a batch of aged history each time.
    /// Idempotent.
    func startHeartbeat() {
        let starts = withHandles { machine, handles -> Bool in
            guard machine.lifecycle == .running, !handles.hasBeaten else { return false }
            handles.hasBeaten = true
            return true
        }
        if starts { spawn { await self.beat() } }
    }

    /// Whether this runner recorded itself alive: then its shutdown removes the record.
    var hasRecordedAlive: Bool { withHandles { $1.hasBeaten } }

    /// One heartbeat. The next is armed first: a slow store does not stretch the interval.
    private func beat() async {
        guard isStarted else { return }
        let next = schedule(after: heartbeatInterval) { runner in runner.spawn { await runner.beat() } }
        let old = withHandles { machine, handles -> ScheduledCallback? in
            guard machine.lifecycle == .running else { return next }
            defer { handles.heartbeat = next }
            return handles.heartbeat
        }
        old?.cancel()
        await recordAlive(now: context.now())
    }

    /// Records this instance as alive (``DurableTimers/instances()``), and prunes the run history
    /// by age, a batch at a time.
    private func recordAlive(now: Int64) async {
        let options = context.options
        let instance = DurableInstance(
            namespace: context.namespace, id: owner, host: ProcessInfo.processInfo.hostName, processID: ProcessInfo.processInfo.processIdentifier,
            handlers: handlerNames, started: now, seen: now, interval: heartbeatInterval)
        do {
            try await context.store.heartbeat(instance)
            if options.history.runsPerTimer > 0 {
                let before = now.addingSaturating(-options.history.maxAge.saturatingNanoseconds)
                _ = try await context.store.pruneHistory(namespace: context.namespace, endedBefore: before, limit: Self.pruneBatch)
            }
        } catch {
            options.onError(error)
        }
    }

    /// The most history rows one prune removes: a short write, however much has aged out.
    static let pruneBatch = 5_000
}
