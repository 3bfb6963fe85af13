import ArgumentParser
import Foundation
import TimerKitDurable

/// `timerkit durable ls`.
struct DurableListCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List stored timers, a page at a time, in key order.",
        usage: """
            timerkit durable ls [--db <database>] [--namespace <name>] [<filter> ...]
            [--limit <n>] [--after <cursor>] [--all] [--json]
            """,
        discussion: """
            A table: key, handler, status, next deadline (UTC), attempts and the last \
            error (cut to the terminal's width). When there are more, the last line gives the \
            cursor of the next page: pass it to --after, or use --all.

            --json prints one line of JSON per page, {"timers": [...], "next": CURSOR or null}, \
            each timer with every field (instants in ISO 8601, UTC); with --all, one line per page. \
            A page holds the timers of one query: a walk through the pages sees each timer \
            stored throughout exactly once.

            Statuses: scheduled (waiting for its occurrence), due (its time has come, no runner \
            holds it), running (a runner holds it), retrying (its handler threw; it waits for the \
            retry), parked (failed; waits for retry or cancel), paused (by key, handler or \
            namespace; waits for resume).

            Examples:
              timerkit durable ls --db timers.sqlite --status parked
              timerkit durable ls --handler sale.end --due-before tomorrow --json --all
            """)

    @OptionGroup var store: DurableStoreOptions
    @OptionGroup var filter: DurableFilterOptions

    @Option(help: ArgumentHelp("The most timers on a page (1 to 10000).", valueName: "n"))
    var limit = 100

    @Option(help: ArgumentHelp("Start after this cursor (from the last line of a page).", valueName: "cursor"))
    var after: String?

    @Flag(help: "Follow the cursor through every page.")
    var all = false

    @Flag(help: "One line of JSON per page, for scripts.")
    var json = false

    func validate() throws {
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1 to 10000, got \(limit)") }
        if let after, DurableTimerQuery.Cursor(after) == nil { throw ValidationError("invalid cursor '\(after)': pass the one a page printed") }
        do {
            _ = try filter.statuses()
        } catch {
            throw ValidationError(error.message)
        }
    }

    func perform() async throws {
        var query = try filter.query(limit: limit, after: after.flatMap(DurableTimerQuery.Cursor.init))
        let timers = try await store.open()
        var listed: [DurableTimerInfo] = []
        repeat {
            let page = try await timers.timers(matching: query)
            if json {
                let now = Date()
                Output.line(
                    DurableFormat.jsonLine(
                        [
                            "timers": page.timers.map { DurableFormat.json($0, now: now) }, "next": page.next?.description ?? NSNull()
                        ] as [String: Any]))
            } else {
                // One table for every page, its columns as wide as the widest cell of all.
                listed += page.timers
            }
            query.after = page.next
        } while all && query.after != nil
        guard !json else { return }
        if listed.isEmpty {
            Output.error("timerkit durable ls: no timer matches (\(filter.summary)) in namespace '\(store.namespace)'")
        } else {
            printTable(listed, now: Date())
        }
        if let next = query.after, !all { Output.line("more: --after \(next)") }
    }

    private func printTable(_ timers: [DurableTimerInfo], now: Date) {
        var table = DurableTable("KEY", "HANDLER", "STATUS", "NEXT DEADLINE", "ATTEMPTS", "LAST ERROR")
        for timer in timers {
            table.append([
                timer.key, timer.handler, DurableFormat.status(of: timer, now: now).rawValue, DurableFormat.instant(timer.nextDeadline),
                "\(timer.attempts)", timer.lastError ?? ""
            ])
        }
        // The last error is cut to the terminal's width; a pipe gets it whole.
        for line in table.lines(width: Terminal.isOutputTerminal ? Terminal.columns : nil) { Output.line(line) }
    }
}
