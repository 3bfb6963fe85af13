import Foundation
import TimerKitDurable

/// A web dashboard for durable timers: the fleet at a glance, a timer's fields, `why`, plan and
/// history, the parked and orphan lists, and the actions (retry, run now, cancel, pause and resume
/// of a timer, a handler or the namespace) — server-rendered HTML that works without JavaScript
/// and refreshes itself with it.
///
/// It is independent of any HTTP server: ``respond(to:)`` turns a ``DashboardRequest`` into a
/// ``DashboardResponse``. `timerkit durable serve` carries it on SwiftNIO; in an application's own
/// server (Hummingbird, Vapor, a NIO handler), mount it under a path with a catch-all route for
/// `GET`, `HEAD` and `POST` that builds a ``DashboardRequest`` from the request (the target below
/// the mount point) and writes the response back:
///
/// ```swift
/// let dashboard = DurableTimersDashboard(timers: timers, options: .init(mountPath: "/admin/timers", token: adminToken))
/// // In the route: the method, the path below /admin/timers with its query, the headers, the body.
/// let response = await dashboard.respond(to: DashboardRequest(method: method, target: target, headers: headers, body: body))
/// ```
///
/// **Safe by default.** Every action needs a login with the token (``Options/token``): a session
/// cookie (`HttpOnly`, `SameSite=Strict`) and a CSRF token in every form, checked on every `POST`;
/// reading needs one too unless ``Options/readRequiresLogin`` is off. Every key, handler, payload
/// and error is escaped; a payload is shown as text up to ``Options/payloadLimit`` bytes; the page
/// builds no SQL (it calls ``DurableTimers``'s query API); its only script is its own (a
/// `Content-Security-Policy` forbids any other, inline ones included).
public final class DurableTimersDashboard: Sendable {
    let timers: DurableTimers
    let options: Options
    let sessions = Sessions()

    /// Makes a dashboard of `timers` (a runner that need not run: the tool opens one per database).
    public init(timers: DurableTimers, options: Options) {
        self.timers = timers
        self.options = options
    }

    /// Answers one request.
    public func respond(to request: DashboardRequest) async -> DashboardResponse {
        let session = request.cookies[Sessions.cookie].flatMap { sessions.session($0) }
        let page = Page(dashboard: self, request: request, session: session)
        switch (request.method, request.path) {
        case ("GET", "/assets/dashboard.css"), ("HEAD", "/assets/dashboard.css"): return Assets.response(Assets.css, type: "text/css; charset=utf-8")
        case ("GET", "/assets/dashboard.js"), ("HEAD", "/assets/dashboard.js"): return Assets.response(Assets.script, type: "text/javascript; charset=utf-8")
        case ("GET", "/login"), ("HEAD", "/login"): return page.login(error: nil)
        case ("POST", "/login"): return await page.logIn()
        case ("POST", "/logout"): return page.logOut()
        default: break
        }
        if session == nil {
            if options.readRequiresLogin {
                return page.redirect(to: "/login", query: [("next", request.path + Self.queryText(request.query))])
            }
            // Open for reading on loopback: only to a loopback name (a page elsewhere that rebinds
            // its own name to 127.0.0.1 is refused).
            guard let host = request.host, Self.isLoopback(host) else {
                return page.plain(403, "Forbidden: this dashboard answers to a loopback name (localhost, 127.0.0.1, [::1]) until you log in")
            }
        }
        do {
            switch (request.method, request.path) {
            case ("GET", "/"), ("HEAD", "/"): return try await page.overview()
            case ("GET", "/timers"), ("HEAD", "/timers"): return try await page.list(preset: nil)
            case ("GET", "/parked"), ("HEAD", "/parked"): return try await page.list(preset: .parked)
            case ("GET", "/orphans"), ("HEAD", "/orphans"): return try await page.orphans()
            case ("GET", "/timer"), ("HEAD", "/timer"): return try await page.timer()
            case ("GET", "/confirm"), ("HEAD", "/confirm"): return page.confirm()
            case ("POST", let path) where path.hasPrefix("/actions/"): return try await page.act(String(path.dropFirst("/actions/".count)))
            case ("GET", _), ("HEAD", _): return page.notFound()
            default:
                var response = page.plain(405, "Method not allowed")
                response.headers.append(("Allow", "GET, HEAD, POST"))
                return response
            }
        } catch {
            return page.failure(error)
        }
    }

    /// Whether `host` (a `Host` header's name, or an address to listen on, without brackets or
    /// port) names this machine's loopback: `localhost` (and its subdomains), `::1`, 127.0.0.0/8.
    package static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        // 127.0.0.0/8, written as an address (not a name that starts with 127.).
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in UInt8(part) != nil } && parts[0] == "127"
    }

    static func queryText(_ query: [String: String]) -> String {
        let text = FormEncoding.query(query.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return text.isEmpty ? "" : "?" + text
    }
}
