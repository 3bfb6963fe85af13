import Foundation
import TimerKitDurable

// The overview: counts by status and handler, lateness of recent runs, late timers, instances.

extension Page {
    static let statuses: [DurableTimerQuery.Status] = [.scheduled, .due, .running, .retrying, .parked, .paused]

    func overview() async throws -> DashboardResponse {
        let stats = try await timers.stats(lateBy: options.lateBy)
        let late = try await timers.timers(matching: DurableTimerQuery(lateBy: options.lateBy, limit: 20))
        let totals = stats.totals
        let cards: [HTML] = Self.statuses.map { status in
            "<a class=\"card \(status.rawValue)\" href=\"\(link("/timers", [("status", status.rawValue)]))\"><span class=\"number\">\(totals[status] ?? 0)</span><span class=\"label\">\(status.rawValue)</span></a>"
        }
        let namespaceAction: HTML =
            stats.isNamespacePaused
            ? "<span class=\"badge paused\">namespace paused</span> \(action("resume-namespace", "Resume the namespace", []))"
            : action("pause-namespace", "Pause the namespace", [])
        let rows: [HTML] = stats.handlers.map { handler in
            let cells: [HTML] = Self.statuses.map { status in
                let count = handler.counts[status] ?? 0
                return
                    "<td class=\"count\" data-status=\"\(status.rawValue)\">\(count == 0 ? HTML(raw: "<span class=\"zero\">0</span>") : "<a href=\"\(link("/timers", [("status", status.rawValue), ("handler", handler.name)]))\">\(count)</a>")</td>"
            }
            let lateness = handler.lateness.map { "\(DurableTimerText.duration($0.median)) / \(DurableTimerText.duration($0.p99))" } ?? "—"
            let toggle =
                handler.isPaused
                ? action("resume-handler", "Resume", [("handler", handler.name)]) : action("pause-handler", "Pause", [("handler", handler.name)])
            return """
                <tr data-handler="\(handler.name)"><th scope="row"><a href="\(link("/timers", [("handler", handler.name)]))">\(handler.name)</a>\
                \(handler.isPaused ? HTML(raw: " <span class=\"badge paused\">paused</span>") : "")</th>\(cells)\
                <td class="late">\(handler.late)</td><td class="lateness">\(lateness)</td><td>\(toggle)</td></tr>
                """
        }
        let instances: [HTML] = stats.instances.map { instance in
            let alive = instance.isAlive(at: stats.taken)
            return """
                <tr data-instance="\(instance.id)"><td>\(instance.id)</td><td>\(instance.host) (pid \(Int(instance.processID)))</td>\
                <td>\(instance.handlers.joined(separator: ", "))</td><td>\(relative(instance.started, now: stats.taken))</td>\
                <td>\(relative(instance.lastSeen, now: stats.taken))</td>\
                <td><span class="badge \(alive ? "alive" : "gone")">\(alive ? "alive" : "not seen")</span></td></tr>
                """
        }
        let lateRows: [HTML] = late.timers.map { timer in
            "<tr data-key=\"\(timer.key)\"><td><a class=\"key\" href=\"\(link("/timer", [("key", timer.key)]))\">\(timer.key)</a></td><td>\(timer.handler)</td><td>\(relative(timer.nextDeadline, now: stats.taken))</td></tr>"
        }
        let body: HTML = """
            <div class="heading"><h1>Durable timers</h1><div class="actions">\(namespaceAction)</div></div>
            <p class="meta">Namespace <strong>\(stats.namespace)</strong> at \(DurableTimerText.instant(stats.taken)) (the store's clock; \
            <span id="clock-offset">\(DurableTimerText.duration(stats.clockOffset))</span> from this host's).</p>
            <div class="cards">\(cards)</div>
            <section><h2>By handler</h2>
            <div class="table-wrap"><table id="handlers"><thead><tr><th scope="col">Handler</th>\
            \(Self.statuses.map { status -> HTML in "<th scope=\"col\">\(status.rawValue)</th>" })\
            <th scope="col">late</th><th scope="col" title="median / p99 over the last hour">lateness</th><th scope="col"></th></tr></thead>
            <tbody>\(rows.isEmpty ? HTML(raw: "<tr><td colspan=\"10\" class=\"empty\">No timers.</td></tr>") : rows.joined())</tbody></table></div>
            </section>
            <section><h2>Lateness of recent runs</h2>\(lagChart(stats.handlers))</section>
            <section><h2>Late timers</h2><p class="meta">Due more than \(DurableTimerText.duration(options.lateBy)) ago and not run.</p>
            <div class="table-wrap"><table id="late"><thead><tr><th scope="col">Key</th><th scope="col">Handler</th><th scope="col">Due</th></tr></thead>
            <tbody>\(lateRows.isEmpty ? HTML(raw: "<tr><td colspan=\"3\" class=\"empty\">None.</td></tr>") : lateRows.joined())</tbody></table></div></section>
            <section><h2>Instances</h2>
            <div class="table-wrap"><table id="instances"><thead><tr><th scope="col">Instance</th><th scope="col">Host</th><th scope="col">Handlers</th>\
            <th scope="col">Started</th><th scope="col">Last seen</th><th scope="col"></th></tr></thead>
            <tbody>\(instances.isEmpty ? HTML(raw: "<tr><td colspan=\"6\" class=\"empty\">No instance has run here.</td></tr>") : instances.joined())</tbody></table></div>
            </section>
            """
        return document(title: "Overview", body)
    }

    /// Median and p99 lateness per handler over the stats' window, as bars (an SVG drawn here: no
    /// script needed).
    private func lagChart(_ handlers: [DurableTimerStats.Handler]) -> HTML {
        let measured = handlers.compactMap { handler in handler.lateness.map { (handler.name, $0.median, $0.p99, handler.recentRuns) } }
        guard !measured.isEmpty else {
            return
                "<svg id=\"lag-chart\" class=\"chart\" viewBox=\"0 0 1000 40\" role=\"img\" aria-label=\"no runs\"><text x=\"0\" y=\"24\">No runs in the last hour.</text></svg>"
        }
        let seconds = { (duration: Duration) in Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }
        let top = max(measured.map { seconds($0.2) }.max() ?? 0, 0.001)
        let rowHeight = 34
        let bars: [HTML] = measured.enumerated().map { index, entry in
            let (name, median, p99, runs) = entry
            let y = index * rowHeight
            let width = { (value: Double) in Int((value / top * 560).rounded()) }
            return """
                <text x="0" y="\(y + 14)" class="name">\(name)</text>\
                <rect x="200" y="\(y + 2)" width="\(max(1, width(seconds(p99))))" height="12" class="p99"></rect>\
                <rect x="200" y="\(y + 16)" width="\(max(1, width(seconds(median))))" height="12" class="median"></rect>\
                <text x="\(200 + width(seconds(p99)) + 6)" y="\(y + 12)" class="value">p99 \(DurableTimerText.duration(p99))</text>\
                <text x="\(200 + width(seconds(median)) + 6)" y="\(y + 26)" class="value">median \(DurableTimerText.duration(median)) · \(runs) runs</text>
                """
        }
        return """
            <svg id="lag-chart" class="chart" viewBox="0 0 1000 \(measured.count * rowHeight)" role="img" aria-label="lateness by handler">\(bars)</svg>
            """
    }

    /// `3m 20s ago`, `in 5m 0s`.
    func relative(_ date: Date, now: Date) -> HTML {
        let offset = DurableTimerText.offset(of: date, from: now)
        let text = DurableTimerText.duration(offset < .zero ? .zero - offset : offset)
        return
            "<time datetime=\"\(DurableTimerText.instant(date))\" title=\"\(DurableTimerText.instant(date))\">\(offset >= .zero ? "in \(text)" : "\(text) ago")</time>"
    }

    /// A link to the confirmation page of an action.
    func action(_ name: String, _ label: String, _ target: [(String, String?)]) -> HTML {
        "<a class=\"action button\" data-action=\"\(name)\" href=\"\(link("/confirm", [("action", name)] + target))\">\(label)</a>"
    }
}
