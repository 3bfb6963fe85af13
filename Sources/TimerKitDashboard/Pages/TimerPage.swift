import Foundation
import TimerKitDurable

// A timer's page: its fields, why it is where it is, its next occurrences, its runs.

extension Page {
    func timer() async throws -> DashboardResponse {
        let key = request.query["key"] ?? ""
        do {
            return try await timer(key)
        } catch let error as DurableTimerError {
            // Gone between two reads (it ran, or was cancelled): as if it had been gone before.
            guard case .notFound = error else { throw error }
            return try await missing(key)
        }
    }

    private func missing(_ key: String) async throws -> DashboardResponse {
        var response = document(
            title: "Not found",
            """
            <h1 id="timer-key">\(key)</h1>
            <p id="not-found" class="meta">No timer is stored under this key: it completed (a one-shot is removed once it has run), was cancelled, or never existed.</p>
            \(historySection(try await timers.history(key: key, limit: 20)))
            """)
        response.status = 404
        return response
    }

    private func timer(_ key: String) async throws -> DashboardResponse {
        let diagnosis = try await timers.why(key: key)
        guard let timer = diagnosis.timer else { return try await missing(key) }
        let now = diagnosis.checkedAt
        let status = timer.status(at: now).rawValue
        let plan = try await timers.plan(key: key, count: 10, outage: .seconds(3_600))
        let payload = try await timers.payload(key: key) ?? Data()
        let shown = String(decoding: payload.prefix(options.payloadLimit), as: UTF8.self)
        let cut: HTML = payload.count > options.payloadLimit ? "<p class=\"meta\">The first \(options.payloadLimit) of \(payload.count) bytes.</p>" : ""
        let recurrence: String =
            if let interval = timer.interval { "every \(DurableTimerText.duration(interval))" } else if let schedule = timer.schedule {
                schedule.description
            } else if let rule = timer.rule { String(describing: rule) } else { "once" }
        let fields: [(String, HTML)] = [
            ("Handler", "<a href=\"\(link("/timers", [("handler", timer.handler)]))\">\(timer.handler)</a>"),
            ("Next deadline", "\(DurableTimerText.instant(timer.nextDeadline)) (\(relative(timer.nextDeadline, now: now)))"),
            ("Ready at", "\(DurableTimerText.instant(timer.readyAt))"),
            ("Repeats", "\(recurrence)"),
            ("Misfire policy", "\(String(describing: timer.misfire))"),
            ("Fires so far", "\(timer.fireCount)"),
            ("Attempts", "\(timer.attempts)"),
            ("Last error", "\(timer.lastError ?? "—")"),
            ("Claimed by", "\(timer.owner.map { "\($0) until \(timer.leaseUntil.map(DurableTimerText.instant) ?? "?")" } ?? "—")")
        ]
        let why: [HTML] = (diagnosis.sentences.dropFirst() + [diagnosis.lastRunSentence]).map { "<li>\($0)</li>" }
        let occurrences: [HTML] = plan.occurrences.map { date in
            "<tr><td>\(DurableTimerText.instant(date))</td><td>\(plan.timeZone.map { DurableTimerText.instant(date, in: $0) } ?? "")</td></tr>"
        }
        let outage: HTML =
            plan.afterOutage.map { after in
                "<p class=\"meta\">After an outage of \(DurableTimerText.duration(after.outage)): "
                    + (after.fires
                        ? "it fires once, standing for \(after.standsFor) occurrence(s), \(after.skipped) skipped."
                        : "it does not fire (\(after.parkedBecause ?? "the misfire policy skips it")).") + "</p>"
            } ?? ""
        let actions: [HTML] = [
            status == "parked" || status == "retrying" ? action("retry", "Retry", [("key", key)]) : "",
            status == "scheduled" || status == "retrying" ? action("fire", "Run now", [("key", key)]) : "",
            status == "paused" ? action("resume", "Resume", [("key", key)]) : action("pause", "Pause", [("key", key)]),
            action("cancel", "Cancel", [("key", key)])
        ]
        let body: HTML = """
            <div class="heading"><h1 id="timer-key">\(key)</h1><div class="actions">\(actions)</div></div>
            <dl class="fields"><dt>Status</dt><dd id="status"><span class="badge \(status)">\(status)</span></dd>\
            \(fields.map { name, value -> HTML in "<dt>\(name)</dt><dd>\(value)</dd>" })</dl>
            <section><h2>Why</h2><p id="why-text">\(diagnosis.sentences.first ?? "")</p>
            <ul class="why">\(why)</ul></section>
            <section><h2>Payload</h2><pre id="payload">\(shown)</pre>\(cut)</section>
            <section><h2>Next occurrences</h2>
            <div class="table-wrap"><table id="plan"><thead><tr><th scope="col">UTC</th><th scope="col">\(plan.timeZone?.identifier ?? "")</th></tr></thead>
            <tbody>\(occurrences.isEmpty ? HTML(raw: "<tr><td colspan=\"2\" class=\"empty\">None.</td></tr>") : occurrences.joined())</tbody></table></div>
            \(outage)</section>
            \(historySection(try await timers.history(key: key, limit: 20)))
            """
        return document(title: key, body)
    }

    private func historySection(_ runs: [DurableTimerRun]) -> HTML {
        let rows: [HTML] = runs.map { run in
            """
            <tr class="run" data-sequence="\(run.sequence)"><td>\(DurableTimerText.instant(run.started))</td><td class="outcome"><span class="badge \(run.outcome.rawValue)">\(run.outcome.rawValue)</span></td>\
            <td>\(run.attempt)</td><td>\(DurableTimerText.duration(run.lateness))</td><td>\(DurableTimerText.duration(run.duration))</td>\
            <td>\(run.instance)</td><td class="error">\(run.error ?? "")</td></tr>
            """
        }
        return """
            <section><h2>Runs</h2>
            <div class="table-wrap"><table id="history"><thead><tr><th scope="col">Started</th><th scope="col">Outcome</th><th scope="col">Attempt</th>\
            <th scope="col">Late</th><th scope="col">Took</th><th scope="col">Instance</th><th scope="col">Error</th></tr></thead>
            <tbody>\(rows.isEmpty ? HTML(raw: "<tr><td colspan=\"7\" class=\"empty\">No runs recorded.</td></tr>") : rows.joined())</tbody></table></div></section>
            """
    }
}
