import Foundation

/// A runner that records itself in the store while it runs (``DurableTimers/instances()``): which
/// process, which handlers it has registered, and when it was last seen alive.
///
/// A running runner records itself when it starts and again at each load of its horizon (every
/// half ``DurableTimers/Options/horizon``); ``DurableTimers/shutdown(gracePeriod:)`` removes the
/// record. One not seen for three of its intervals (and 10 seconds more) has stopped without a
/// shutdown (a crash, a kill) or is frozen: ``DurableTimers/why(key:)`` counts it as gone.
public struct DurableInstance: Sendable, Hashable {
    /// The namespace it runs.
    public let namespace: String
    /// The runner's id (``DurableTimers/instance``): the first part of its claims' tokens.
    public let id: String
    /// The host it runs on.
    public let host: String
    /// Its process id.
    public let processID: Int32
    /// The handlers it has registered, sorted.
    public let handlers: [String]
    /// When it started running (the store's time).
    public var started: Date { Date(nanosecondsSince1970: startedNanoseconds) }
    /// When it last recorded itself (the store's time).
    public var lastSeen: Date { Date(nanosecondsSince1970: seenNanoseconds) }
    /// How often it records itself (half its horizon).
    public var interval: Duration { .nanoseconds(intervalNanoseconds) }

    package let startedNanoseconds: Int64
    package let seenNanoseconds: Int64
    package let intervalNanoseconds: Int64

    package init(namespace: String, id: String, host: String, processID: Int32, handlers: [String], started: Int64, seen: Int64, interval: Int64) {
        self.namespace = namespace
        self.id = id
        self.host = host
        self.processID = processID
        self.handlers = handlers
        self.startedNanoseconds = started
        self.seenNanoseconds = seen
        self.intervalNanoseconds = interval
    }

    /// Whether it was seen within three of its intervals and 10 seconds of `date` (the store's
    /// time: ``DurableTimerStats/taken``, say): an instance that is not has stopped without a
    /// shutdown or is frozen.
    public func isAlive(at date: Date) -> Bool { isAlive(at: date.nanosecondsSince1970) }

    /// Whether it was seen within three intervals and 10 seconds of `now`.
    package func isAlive(at now: Int64) -> Bool {
        seenNanoseconds.duration(to: now) <= intervalNanoseconds.multipliedReportingOverflow(by: 3).partialValue.addingSaturating(10_000_000_000)
    }
}
