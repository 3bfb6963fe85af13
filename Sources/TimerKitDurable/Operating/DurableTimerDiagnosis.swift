import Foundation

/// Why a durable timer has not fired, on the store's time (``DurableTimers/why(key:)``): the
/// timer's state read together with the pauses, the instances alive and the handlers they run.
public struct DurableTimerDiagnosis: Sendable, Hashable, CustomStringConvertible {
    /// What holds a paused timer.
    public enum PauseScope: Sendable, Hashable {
        /// It was paused by its key.
        case key
        /// Its handler is paused.
        case handler(String)
        /// The whole namespace is paused.
        case namespace
    }

    /// One finding; a diagnosis has one or more, the first being the answer.
    public enum Reason: Sendable, Hashable {
        /// No timer is stored under the key (see ``DurableTimerDiagnosis/lastRun``: a one-shot that
        /// ran is removed).
        case notFound
        /// Its occurrence has not come: it is ready at `at`, `in` from now.
        case notDueYet(at: Date, in: Duration)
        /// Its handler threw at attempt `attempt`; it is tried again at `at`.
        case retrying(attempt: Int, at: Date, error: String?)
        /// It is paused, by itself, its handler or the namespace.
        case paused(PauseScope)
        /// It is parked as failed, with why.
        case parked(error: String)
        /// An instance holds it under a lease until `until`: its handler runs there (or the
        /// instance died, `instanceAlive` false, and the lease will run out).
        case running(instance: String, until: Date, instanceAlive: Bool)
        /// It is due (ready `for` that long) and live instances run its handler: a claim should
        /// take it at once; if it stays here, they are behind (see ``DurableTimers/stats(lateBy:window:)``).
        case due(for: Duration, instances: [String])
        /// It is due, and no live instance has registered its handler: it waits, untouched.
        case orphan(handler: String)
        /// No instance of the namespace is alive: nothing runs its timers.
        case noInstance
        /// The store's clock differs from this host's by more than a second: instants here are
        /// the store's.
        case clockOffset(Duration)
    }

    /// The key asked about.
    public let key: String
    /// The timer, if one is stored.
    public let timer: DurableTimerInfo?
    /// Its last recorded run (also for a one-shot that ran and is gone), if the history has one.
    public let lastRun: DurableTimerRun?
    /// The findings, the answer first.
    public let reasons: [Reason]
    /// When it was checked, on the store's clock.
    public let checkedAt: Date

    package init(key: String, timer: DurableTimerInfo?, lastRun: DurableTimerRun?, reasons: [Reason], checkedAt: Date) {
        self.key = key
        self.timer = timer
        self.lastRun = lastRun
        self.reasons = reasons
        self.checkedAt = checkedAt
    }

    /// The findings as sentences, one per line, and the last run.
    public var description: String {
        (sentences + [lastRunSentence]).joined(separator: "\n")
    }

    /// Each reason as a sentence (for the dashboard, which lists them).
    package var sentences: [String] {
        reasons.map { reason -> String in
            switch reason {
            case .notFound:
                return "no timer is stored under '\(key)'"
            case .notDueYet(let at, let wait):
                return "not due yet: ready at \(DurableTimerText.instant(at)), in \(DurableTimerText.duration(wait))"
            case .retrying(let attempt, let at, let error):
                return "retrying: attempt \(attempt) failed (\(error ?? "no error recorded")); next attempt at \(DurableTimerText.instant(at))"
            case .paused(.key):
                return "paused (this timer): resume it to run it"
            case .paused(.handler(let handler)):
                return "paused: its handler '\(handler)' is paused"
            case .paused(.namespace):
                return "paused: the whole namespace is paused"
            case .parked(let error):
                return "parked as failed: \(error); retry it to run it again"
            case .running(let instance, let until, let alive):
                return "claimed by instance \(instance) until \(DurableTimerText.instant(until))"
                    + (alive ? ": its handler is running there" : ", which is not alive: the lease runs out then and another instance takes it")
            case .due(let wait, let instances):
                return
                    "due for \(DurableTimerText.duration(wait)); live instances running its handler: \(instances.joined(separator: ", ")) — a claim should take it now"
            case .orphan(let handler):
                return "orphan: no live instance has registered its handler '\(handler)'"
            case .noInstance:
                return "no instance of this namespace is alive: nothing runs its timers"
            case .clockOffset(let offset):
                return "the store's clock is \(DurableTimerText.duration(offset)) off this host's; times here are the store's"
            }
        }
    }

    /// The last run as a sentence.
    package var lastRunSentence: String {
        guard let lastRun else { return "last run: none recorded" }
        return "last run: \(lastRun.outcome.rawValue) at \(DurableTimerText.instant(lastRun.started)) (\(DurableTimerText.duration(lastRun.lateness)) late, "
            + "took \(DurableTimerText.duration(lastRun.duration)), attempt \(lastRun.attempt), instance \(lastRun.instance))"
            + (lastRun.error.map { ": \($0)" } ?? "")
    }
}
