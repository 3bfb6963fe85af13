import ArgumentParser
import Foundation
import TimerKitDurable

/// Which timers: `--status`, `--handler`, `--prefix`, `--due-before`, `--due-after`, `--late-by`, shared by
/// `ls`, `cancel` and `retry`.
struct DurableFilterOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Only timers in this status: \(DurableFilterOptions.statusNames) (repeat it, or separate with commas, for several).",
            valueName: "status"))
    var status: [String] = []

    @Option(help: ArgumentHelp("Only timers of this handler.", valueName: "name"))
    var handler: String?

    @Option(help: ArgumentHelp("Only keys that begin with this text.", valueName: "text"))
    var prefix: String?

    @Option(
        help: ArgumentHelp("Only timers whose next deadline is before this: \(DurableDateText.help).", valueName: "date"),
        transform: { text throws(UsageError) in try DurableDateText.date(text) })
    var dueBefore: Date?

    @Option(
        help: ArgumentHelp("Only timers whose next deadline is at or after this date.", valueName: "date"),
        transform: { text throws(UsageError) in try DurableDateText.date(text) })
    var dueAfter: Date?

    @Option(
        help: ArgumentHelp(
            "Only repeating timers whose occurrence came more than this long ago and has not succeeded (late ones).", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.duration(text) })
    var lateBy: Duration?

    static var statusNames: String { DurableTimerQuery.Status.allCases.map(\.rawValue).joined(separator: ", ") }

    /// The statuses given, each checked.
    func statuses() throws(UsageError) -> Set<DurableTimerQuery.Status> {
        var statuses: Set<DurableTimerQuery.Status> = []
        let words = status.flatMap { $0.split(separator: ",").map { String(String($0).trimmingWhitespace).lowercased() } }
        for word in words {
            guard let status = DurableTimerQuery.Status(rawValue: word) else {
                throw UsageError("unknown status '\(word)': use \(Self.statusNames)")
            }
            statuses.insert(status)
        }
        return statuses
    }

    /// Whether no filter was given (every timer matches).
    var isEmpty: Bool { status.isEmpty && handler == nil && prefix == nil && dueBefore == nil && dueAfter == nil && lateBy == nil }

    /// The query of the first page.
    func query(limit: Int, after cursor: DurableTimerQuery.Cursor? = nil) throws(UsageError) -> DurableTimerQuery {
        DurableTimerQuery(
            statuses: try statuses(), handler: handler, keyPrefix: prefix, dueFrom: dueAfter, dueBefore: dueBefore, lateBy: lateBy, limit: limit,
            after: cursor)
    }

    /// The filter in words: `status parked, handler sale.end`.
    var summary: String {
        var parts: [String] = []
        if !status.isEmpty { parts.append("status \(status.joined(separator: ","))") }
        if let handler { parts.append("handler \(handler)") }
        if let prefix { parts.append("keys beginning with '\(prefix)'") }
        if let dueAfter { parts.append("due at or after \(DurableFormat.instant(dueAfter))") }
        if let dueBefore { parts.append("due before \(DurableFormat.instant(dueBefore))") }
        if let lateBy { parts.append("late by more than \(DurationText.describe(lateBy))") }
        return parts.isEmpty ? "every timer" : parts.joined(separator: ", ")
    }

    /// Every key the filter matches, through every page.
    func keys(in timers: DurableTimers) async throws -> [String] {
        var query = try query(limit: 10_000)
        var keys: [String] = []
        repeat {
            let page = try await timers.timers(matching: query)
            keys += page.timers.map(\.key)
            query.after = page.next
        } while query.after != nil
        return keys
    }
}
