import Dispatch
import Foundation
import Synchronization

// What the engine asks of a timer, under its shard's lock: invalidation with the run gate, the
// machine's transitions, the handler's release, and the end of a run.
extension ScheduledTimer {
    /// Makes the timer invalid, and stops a run that was decided but has not begun (C8, also for a
    /// one-shot's final run); returns what must be released and notified after the lock is let go.
    @inline(__always)
    func invalidateLocked() -> (Handler?, (@Sendable () -> Void)?) {
        // The stopped run is not counted: `fireCount` read after invalidate() returns is final.
        if runGate.stopDecided() { machine.uncountStoppedRun() }
        guard machine.invalidate() else { return (nil, nil) }
        return releaseHandler()
    }

    /// Runs a transition that may let go of the machine's catch-up record (``TimerStateMachine``
    /// boxes it) on a copy, and swaps the copy in: the old value is released after the access to
    /// `machine` has ended. A release inside that access could run arbitrary code as far as the
    /// optimizer knows, and would make it check every access to `machine` at run time, on every
    /// schedule and invalidate.
    @inline(__always)
    func transition<Result>(_ body: (inout TimerStateMachine) -> Result) -> Result {
        var copy = machine
        let result = body(&copy)
        swap(&machine, &copy)
        return result
    }

    /// Takes the handler and the invalidation hook of a timer the machine made invalid, to be
    /// released and called after the lock is let go.
    func releaseHandler() -> (Handler?, (@Sendable () -> Void)?) {
        let released = handler
        handler = nil
        let hook = onInvalidate
        onInvalidate = nil
        return (released, hook)
    }

    /// Ends a run that began (C8) and resumes the tasks waiting for it. Called by the delivering
    /// thread, without the lock, right after the handler returns.
    @inline(__always)
    func endRun() {
        guard runGate.end() else { return }
        let waiters = withShard { _, state -> [CheckedContinuation<Void, Never>] in
            var waiting = state.runWaiters.removeValue(forKey: ObjectIdentifier(self)) ?? []
            return runGate.takeWaiters(&waiting)
        }
        for waiter in waiters { waiter.resume() }
    }
}
