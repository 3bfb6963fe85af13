import Foundation
import TimerKitDurable

// The lists: timers by the query API's filters, a page at a time behind a cursor; the parked
// timers; the orphans.

extension Page {
    func list(preset: DurableTimerQuery.Status?) async throws -> DashboardResponse {
        let query = request.query
        let status = preset?.rawValue ?? query["status"].flatMap { DurableTimerQuery.Status(rawValue: $0)?.rawValue }
        let handler = query["handler"].flatMap { $0.isEmpty ? nil : $0 }
        let prefix = query["prefix"].flatMap { $0.isEmpty ? nil : $0 }
        let limit = min(max(Int(query["limit"] ?? "") ?? options.pageSize, 1), 500)
        let after = query["after"].flatMap(DurableTimerQuery.Cursor.init)
        let page = try await timers.timers(
            matching: DurableTimerQuery(
                statuses: status.flatMap(DurableTimerQuery.Status.init(rawValue:)).map { [$0] } ?? [], handler: handler, keyPrefix: prefix, limit: limit,
                after: after))
        let filters: [(String, String?)] = [("status", preset == nil ? status : nil), ("handler", handler), ("prefix", prefix), ("limit", query["limit"])]
        let path = preset == nil ? "/timers" : "/parked"
        let options: [HTML] =
            [HTML(raw: "<option value=\"\">any</option>")]
            + Self.statuses.map { option in
                "<option value=\"\(option.rawValue)\"\(HTML(raw: option.rawValue == status ? " selected" : ""))>\(option.rawValue)</option>"
            }
        let statusField: HTML =
            preset == nil
            ? "<label>Status <select name=\"status\">\(options)</select></label>"
            : "<input type=\"hidden\" name=\"status\" value=\"\(preset?.rawValue ?? "")\">"
        let paging: [HTML] = [
            after == nil ? "" : "<a id=\"first-page\" href=\"\(link(path, filters))\">First page</a>",
            page.next.map { next in "<a id=\"next-page\" href=\"\(link(path, filters + [("after", next.description)]))\">Next page</a>" } ?? ""
        ]
        let title = preset == nil ? "Timers" : "Parked timers"
        let body: HTML = """
            <h1>\(title)</h1>
            <form id="filters" method="get" action="\(link(path))" class="filters">
            \(statusField)
            <label>Handler <input name="handler" value="\(handler ?? "")" autocomplete="off"></label>
            <label>Key prefix <input name="prefix" value="\(prefix ?? "")" autocomplete="off"></label>
            <button id="filter-button" type="submit">Filter</button>
            </form>
            \(timerTable(page.timers, now: storeNow))
            <p class="paging">\(paging)</p>
            """
        return document(title: title, body)
    }

    func orphans() async throws -> DashboardResponse {
        // The handlers the live instances run (as they recorded themselves), not this process's:
        // `timerkit durable serve` runs none.
        let now = storeNow
        let instances = try await timers.instances()
        let running = Set(instances.filter { $0.isAlive(at: now) }.flatMap(\.handlers))
        let stats = try await timers.stats(lateBy: options.lateBy)
        var orphans: [DurableTimerInfo] = []
        for handler in stats.handlers.map(\.name) where !running.contains(handler) && orphans.count < 500 {
            let page = try await timers.timers(
                matching: DurableTimerQuery(statuses: [.scheduled, .due, .retrying], handler: handler, limit: 500 - orphans.count))
            orphans += page.timers
        }
        let body: HTML = """
            <h1>Orphans</h1>
            <p class="meta">Timers whose handler no live instance runs: nothing runs them until an instance with the handler starts.</p>
            \(timerTable(orphans, now: now))
            """
        return document(title: "Orphans", body)
    }

    /// A table of timers: key (linked), handler, status, next deadline, attempts, last error.
    func timerTable(_ timers: [DurableTimerInfo], now: Date) -> HTML {
        let rows: [HTML] = timers.map { timer in
            let status = timer.status(at: now).rawValue
            return """
                <tr class="timer" data-key="\(timer.key)"><td><a class="key" href="\(link("/timer", [("key", timer.key)]))">\(timer.key)</a></td>\
                <td class="handler">\(timer.handler)</td><td class="status"><span class="badge \(status)">\(status)</span></td>\
                <td>\(relative(timer.nextDeadline, now: now))</td><td class="attempts">\(timer.attempts)</td>\
                <td class="error">\(timer.lastError.map { String($0.prefix(160)) } ?? "")</td></tr>
                """
        }
        return """
            <div class="table-wrap"><table id="timers"><thead><tr><th scope="col">Key</th><th scope="col">Handler</th><th scope="col">Status</th>\
            <th scope="col">Next deadline</th><th scope="col">Attempts</th><th scope="col">Last error</th></tr></thead>
            <tbody>\(rows.isEmpty ? HTML(raw: "<tr><td colspan=\"6\" class=\"empty\">No timers.</td></tr>") : rows.joined())</tbody></table></div>
            """
    }
}
