import Foundation

/// Which stored timers ``DurableTimers/timers(matching:)`` returns, and where its page starts.
///
/// Pages go in key order (bytes), from ``after``: a timer stored throughout a walk through the
/// pages is on exactly one of them, however many timers are added, fire or are removed meanwhile.
///
/// ```swift
/// var query = DurableTimerQuery(statuses: [.parked], handler: "sale.end", limit: 500)
/// repeat {
///     let page = try await timers.timers(matching: query)
///     for timer in page.timers { print(timer.key, timer.lastError ?? "") }
///     query.after = page.next
/// } while query.after != nil
/// ```
public struct DurableTimerQuery: Sendable, Hashable {
    /// Where a stored timer stands, as the store sees it at the time of the query.
    public enum Status: String, Sendable, Hashable, CaseIterable, Codable {
        /// Waiting for an occurrence that has not come.
        case scheduled
        /// Its occurrence (or its retry, or the end of a dead runner's lease) has come and no
        /// runner holds it: the next claim takes it.
        case due
        /// A runner holds it under a lease that has not ended: its handler runs.
        case running
        /// Its handler threw; it waits for the retry's time.
        case retrying
        /// Parked with its error (``DurableTimerInfo/State/failed``) until retried or cancelled.
        case parked
        /// Paused (by key, by handler or for the namespace) until resumed.
        case paused
    }

    /// Only timers in one of these statuses; empty for all.
    public var statuses: Set<Status>
    /// Only timers of this handler.
    public var handler: String?
    /// Only keys that begin with this text.
    public var keyPrefix: String?
    /// Only timers whose next deadline is at or after this date.
    public var dueFrom: Date?
    /// Only timers whose next deadline is before this date.
    public var dueBefore: Date?
    /// Only repeating timers (an interval, a calendar rule or schedule) whose current occurrence
    /// came more than this long ago and has not succeeded yet: late ones, whether they wait for a
    /// runner, retry, are parked or paused.
    public var lateBy: Duration?
    /// The most timers on a page: 1 to 10,000 (a limit outside is taken as the nearest).
    public var limit: Int
    /// Where the page starts: after the timer a previous page ended with (``DurableTimerPage/next``).
    public var after: Cursor?

    /// A query; with no arguments, the first 100 timers of every status.
    public init(
        statuses: Set<Status> = [], handler: String? = nil, keyPrefix: String? = nil, dueFrom: Date? = nil, dueBefore: Date? = nil,
        lateBy: Duration? = nil, limit: Int = 100, after: Cursor? = nil
    ) {
        self.statuses = statuses
        self.handler = handler
        self.keyPrefix = keyPrefix
        self.dueFrom = dueFrom
        self.dueBefore = dueBefore
        self.lateBy = lateBy
        self.limit = limit
        self.after = after
    }

    /// Where a page starts: after a key. Its text (`description`) reads back with ``init(_:)``,
    /// for a command line or a URL.
    public struct Cursor: Sendable, Hashable, CustomStringConvertible {
        /// The last key of the page before.
        public let key: String

        /// The cursor after `key`.
        public init(after key: String) { self.key = key }

        /// Reads a cursor's text; `nil` if it is not one.
        public init?(_ text: String) {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            guard let data = Data(base64Encoded: base64), let key = String(data: data, encoding: .utf8) else { return nil }
            self.key = key
        }

        /// The key in URL-safe base64, without padding.
        public var description: String {
            Data(key.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }
}
