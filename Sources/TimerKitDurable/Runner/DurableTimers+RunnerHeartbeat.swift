import Foundation
import TimerKit

// The runner's heartbeat: a periodic duty of its own, beside the machine's (the renewal tick, the
// sweep tick and the lease checks, which the machine arms as it needs them).
extension DurableTimers.Runner {
    /// How often this instance records itself alive: half the horizon, the interval its record
    /// declares (``DurableInstance``; one not seen for three of them has stopped).
    var heartbeatInterval: Int64 { max(context.options.horizon.saturatingNanoseconds / 2, 1_000_000) }

    /// Starts the heartbeat once the store is open: records this instance alive now and every
    /// ``heartbeatInterval`` until the runner stops, pruning the aged history each time.
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

    /// One heartbeat. The next is armed first, so a slow store does not stretch the interval; and
    /// one write runs at a time: the beats that come meanwhile (a slow store, or a virtual clock's
    /// jump over many intervals) are served by one more write after it, with the time then.
    private func beat() async {
        guard isStarted else { return }
        let next = schedule(after: heartbeatInterval) { runner in runner.spawn { await runner.beat() } }
        let (old, writes) = withHandles { machine, handles -> (ScheduledCallback?, Bool) in
            guard machine.lifecycle == .running else { return (next, false) }
            defer { handles.heartbeat = next }
            let writes = !handles.heartbeatWrite.isWriting
            handles.heartbeatWrite = writes ? .writing(again: false) : .writing(again: true)
            return (handles.heartbeat, writes)
        }
        old?.cancel()
        guard writes else { return }
        // A write asked for again is not made once the runner stops: its shutdown removes the record.
        var again = true
        while again, isStarted {
            probe { probes in
                probes.heartbeatWrites += 1
                probes.mostHeartbeatWrites = max(probes.mostHeartbeatWrites, probes.heartbeatWrites)
            }
            await recordAlive(now: context.now())
            probe { $0.heartbeatWrites -= 1 }
            again = withHandles { _, handles in
                let again = handles.heartbeatWrite == .writing(again: true)
                handles.heartbeatWrite = again ? .writing(again: false) : .idle
                return again
            }
        }
    }

    /// Records this instance as alive (``DurableTimers/instances()``), and prunes the run history
    /// by age, in batches until one comes back short.
    private func recordAlive(now: Int64) async {
        let options = context.options
        let instance = DurableInstance(
            namespace: context.namespace, id: owner, host: ProcessInfo.processInfo.hostName, processID: ProcessInfo.processInfo.processIdentifier,
            handlers: handlerNames, started: now, seen: now, interval: heartbeatInterval)
        do {
            try await context.store.heartbeat(instance)
            if options.history.runsPerTimer > 0 {
                // Batch after batch until one comes back short: the pruning keeps up with every
                // rate of runs (one batch a beat kept up with 167 a second), a short write at a time.
                let before = now.addingSaturating(-options.history.maxAge.saturatingNanoseconds)
                for _ in 0..<Self.pruneBatchesPerBeat {
                    let pruned = try await context.store.pruneHistory(namespace: context.namespace, endedBefore: before, limit: Self.pruneBatch)
                    guard pruned >= Self.pruneBatch, isStarted else { break }
                }
            }
        } catch {
            options.onError(error)
        }
    }

    /// The most history rows one prune removes: a short write, however much has aged out.
    static let pruneBatch = 5_000

    /// The most batches a beat prunes: a million rows every beat (30 s by default), far more
    /// runs than one instance ends in that time.
    static let pruneBatchesPerBeat = 200

    /// The heartbeat's write: none under way, or one — and whether a beat came meanwhile.
    enum HeartbeatWrite: Equatable {
        case idle
        case writing(again: Bool)

        var isWriting: Bool { self != .idle }
    }
}
