import Foundation
import TimerKitDurable

/// One request's page: the layout every page shares, links under the mount point, and the
/// responses. The pages themselves are in `Pages/`.
struct Page {
    let dashboard: DurableTimersDashboard
    let request: DashboardRequest
    let session: Sessions.Session?

    var timers: DurableTimers { dashboard.timers }
    var options: DurableTimersDashboard.Options { dashboard.options }

    /// Now on the store's clock (the database's, for PostgreSQL), as the queries decide statuses.
    var storeNow: Date { Date(nanosecondsSince1970: timers.now()) }

    /// A path under the mount point, with a query.
    func link(_ path: String, _ query: [(String, String?)] = []) -> String {
        let text = FormEncoding.query(query)
        return options.mountPath + path + (text.isEmpty ? "" : "?" + text)
    }

    /// A whole page: the navigation, the notice of the last action, `body` in `main`.
    /// A refresh interval in the page's milliseconds: at least a second, at most a day (one past
    /// 64 bits of milliseconds had trapped).
    static func milliseconds(_ interval: Duration) -> Int {
        let milliseconds = Double(interval.components.seconds) * 1_000 + Double(interval.components.attoseconds) / 1e15
        return Int(min(max(milliseconds.rounded(), 1_000), 86_400_000))
    }

    func document(title: String, live: Bool = true, _ body: HTML) -> DashboardResponse {
        let refresh = live ? options.refreshInterval.map(Self.milliseconds) : nil
        // An action's answer, kept by the session: a link cannot make the page say anything.
        let notice: HTML =
            request.query["notice"].flatMap { id in session.flatMap { dashboard.sessions.notice(id, for: $0) } }.map { notice in
                "<div id=\"notice\" class=\"notice\(notice.failed ? " failed" : "")\" role=\"status\">\(notice.text)</div>"
            } ?? ""
        let account: HTML =
            session.map { session in
                """
                <form method="post" action="\(link("/logout"))" class="inline"><input type="hidden" name="csrf" value="\(session.csrf)">\
                <button id="nav-logout" type="submit" class="link">Log out</button></form>
                """
            } ?? "<a id=\"nav-login\" href=\"\(link("/login", [("next", request.path + DurableTimersDashboard.queryText(request.query))]))\">Log in</a>"
        let page: HTML = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · TimerKit</title>
            <link rel="stylesheet" href="\(link("/assets/dashboard.css"))">
            <script src="\(link("/assets/dashboard.js"))" defer></script>
            </head>
            <body>
            <header class="top">
            <a class="brand" href="\(link("/"))">TimerKit <span>\(timers.namespace)</span></a>
            <nav>
            <a id="nav-overview" href="\(link("/"))">Overview</a>
            <a id="nav-timers" href="\(link("/timers"))">Timers</a>
            <a id="nav-parked" href="\(link("/parked"))">Parked</a>
            <a id="nav-orphans" href="\(link("/orphans"))">Orphans</a>
            \(account)
            </nav>
            </header>
            <main id="main"\(HTML(raw: refresh.map { " data-refresh=\"\($0)\"" } ?? ""))>
            \(notice)
            \(body)
            </main>
            </body>
            </html>

            """
        return html(200, page)
    }

    /// A page (its body kept for `HEAD` too, so that its length is the `GET`'s: the server leaves
    /// the body out).
    func html(_ status: Int, _ page: HTML, headers: [(name: String, value: String)] = []) -> DashboardResponse {
        let body = Data(page.text.utf8)
        return DashboardResponse(status: status, headers: Self.securityHeaders + [("Content-Type", "text/html; charset=utf-8")] + headers, body: body)
    }

    /// 303 to a page of the dashboard.
    func redirect(to path: String, query: [(String, String?)] = [], headers: [(name: String, value: String)] = []) -> DashboardResponse {
        DashboardResponse(status: 303, headers: Self.securityHeaders + [("Location", link(path, query))] + headers, body: Data())
    }

    func plain(_ status: Int, _ message: String) -> DashboardResponse {
        html(status, "<!doctype html><title>\(message)</title><p>\(message)</p>\n")
    }

    func notFound() -> DashboardResponse {
        var response = document(title: "Not found", live: false, "<h1>Not found</h1><p id=\"not-found\">No page at \(request.path).</p>")
        response.status = 404
        return response
    }

    /// A store failure (the database unreachable, a lock held too long), as a page that says so.
    func failure(_ error: any Error) -> DashboardResponse {
        var response = document(
            title: "Error", live: true,
            "<h1>The timers could not be read</h1><p id=\"error\" class=\"error\">\(String(describing: error))</p><p>The page retries by itself.</p>")
        response.status = 500
        return response
    }

    /// Headers on every response: only the dashboard's own script, style and images; no framing;
    /// no guessing of types; nothing cached.
    static let securityHeaders: [(name: String, value: String)] = [
        (
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store")
    ]
}
