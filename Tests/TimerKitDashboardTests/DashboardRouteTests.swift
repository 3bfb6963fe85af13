import Foundation
import Testing
import TimerKitDashboard
import TimerKitDurable

#if canImport(TimerKitPostgres)
import TimerKitPostgres
#endif

/// The stores the routes are tested on: a SQLite file always; PostgreSQL when the package is built
/// with it (its tests fail, saying so, without `TIMERKIT_POSTGRES_URL`: run them under
/// `Scripts/with-postgres`).
enum Store: String, CaseIterable, CustomStringConvertible {
    case sqlite
    #if canImport(TimerKitPostgres)
    case postgres
    #endif

    var description: String { rawValue }

    struct Missing: Error, CustomStringConvertible {
        var description: String { "TIMERKIT_POSTGRES_URL is not set: run the tests under Scripts/with-postgres" }
    }

    /// A runner on the store: the test's own file, or `namespace` on the test server.
    func open(_ folder: URL, namespace: String, options: DurableTimers.Options) async throws -> DurableTimers {
        switch self {
        case .sqlite:
            return try DurableTimers(path: folder.appendingPathComponent("timers.sqlite").path, namespace: namespace, options: options)
        #if canImport(TimerKitPostgres)
        case .postgres:
            guard let url = ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) else {
                throw Missing()
            }
            return try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
        #endif
        }
    }
}

struct Note: Codable, Sendable { var text: String }

/// A namespace with a timer in each state the pages show: scheduled one-shots, a repeating timer, a
/// parked one (its handler throws, one attempt), an orphan (a handler nobody runs), keys and a
/// payload that are markup, and a runner that runs the handlers.
final class Fixture: Sendable {
    static let scriptKey = "<script>alert(1)</script>"
    static let attributeKey = "\"><img src=x onerror=alert(1)>"
    static let token = "s3cret-token"

    let folder: URL
    let namespace: String
    let timers: DurableTimers
    let scheduler: DurableTimers
    /// The dashboard's own runner, as `timerkit durable serve` opens one: no handler, never run.
    let viewer: DurableTimers
    let dashboard: DurableTimersDashboard

    init(_ store: Store, readRequiresLogin: Bool = false) async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-dashboard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var options = DurableTimers.Options()
        options.onError = { _ in }
        // A timeout for a loaded machine, as a deployment on one would set: the suite runs beside
        // busy loops on every core, with the server on the same two cores, where opening a store
        // once took longer than the default 5 s (a slow server, not an unreachable one).
        options.busyTimeout = .seconds(60)
        namespace = "dashboard-\(UUID().uuidString)"
        timers = try await store.open(folder, namespace: namespace, options: options)
        struct Declined: Error, CustomStringConvertible { var description: String { "card declined" } }
        try await timers.register("email.send", payload: Note.self) { _, _ in }
        try await timers.register("invoice.charge", payload: Note.self, retry: DurableRetryPolicy(maxAttempts: 1)) { _, _ in throw Declined() }
        // Scheduled by a runner that never runs and knows one more handler: no instance runs
        // legacy.cleanup, so its timer is an orphan.
        scheduler = try await store.open(folder, namespace: namespace, options: options)
        for handler in ["email.send", "invoice.charge", "legacy.cleanup"] { try await scheduler.register(handler, payload: Note.self) { _, _ in } }
        let later = Date().addingTimeInterval(3_600)
        for index in 1...12 {
            try await scheduler.schedule(key: "email/\(String(format: "%02d", index))", at: later, handler: "email.send", payload: Note(text: "mail \(index)"))
        }
        try await scheduler.schedule(key: Self.scriptKey, at: later, handler: "email.send", payload: Note(text: "</pre><script>alert(2)</script>"))
        try await scheduler.schedule(key: Self.attributeKey, at: later, handler: "email.send", payload: Note(text: "x"))
        try await scheduler.schedule(key: "report/daily", every: .seconds(3_600), handler: "email.send", payload: Note(text: "report"))
        try await scheduler.schedule(key: "cleanup/old", at: Date(), handler: "legacy.cleanup", payload: Note(text: "old"))
        try await scheduler.schedule(key: "invoice/42", at: Date(), handler: "invoice.charge", payload: Note(text: "invoice 42"))
        viewer = try await store.open(folder, namespace: namespace, options: options)
        dashboard = DurableTimersDashboard(timers: viewer, options: .init(token: Self.token, readRequiresLogin: readRequiresLogin, refreshInterval: nil))
        await timers.start()
        // Wait for the charge to fail and park (one attempt).
        let deadline = Date().addingTimeInterval(60)
        while try await timers.timer(key: "invoice/42")?.state != .failed, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(try await timers.timer(key: "invoice/42")?.state == .failed, "invoice/42 did not park within a minute")
    }

    /// The headers of a browser on this machine: the loopback host, and the cookie if any.
    static func headers(cookie: String?, host: String) -> [(name: String, value: String)] {
        [("Host", host)] + (cookie.map { [("Cookie", $0)] } ?? [])
    }

    func get(_ target: String, cookie: String? = nil, host: String = "127.0.0.1:8080", method: String = "GET") async -> (
        status: Int, text: String, headers: [String: String]
    ) {
        await send(DashboardRequest(method: method, target: target, headers: Self.headers(cookie: cookie, host: host)))
    }

    func post(_ target: String, _ form: [String: String], cookie: String? = nil) async -> (status: Int, text: String, headers: [String: String]) {
        let body = form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        return await send(
            DashboardRequest(method: "POST", target: target, headers: Self.headers(cookie: cookie, host: "localhost:8080"), body: Data(body.utf8)))
    }

    private func send(_ request: DashboardRequest) async -> (status: Int, text: String, headers: [String: String]) {
        let response = await dashboard.respond(to: request)
        let headers = Dictionary(response.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        return (response.status, String(decoding: response.body, as: UTF8.self), headers)
    }

    /// Logs in; the session cookie and the page's CSRF token.
    func logIn() async throws -> (cookie: String, csrf: String) {
        let login = await post("/login", ["token": Self.token, "next": "/"])
        #expect(login.status == 303)
        let setCookie = try #require(login.headers["Set-Cookie"])
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
        let cookie = String(setCookie.prefix { $0 != ";" })
        let page = await get("/confirm?action=retry&key=invoice/42", cookie: cookie)
        let csrf = try #require(page.text.firstMatch(of: /name="csrf" value="([0-9a-f]+)"/)?.1)
        return (cookie, String(csrf))
    }

    func close() async {
        await timers.shutdown(gracePeriod: .zero)
        await scheduler.shutdown(gracePeriod: .zero)
        await viewer.shutdown(gracePeriod: .zero)
        try? FileManager.default.removeItem(at: folder)
    }
}

@Suite("The dashboard's routes on both stores: pages, filters, paging, actions, login and escaping")
struct DashboardRouteTests {
    @Test("The overview shows the counts by status and handler, the lateness chart, the instances and the clock offset", arguments: Store.allCases)
    func overview(store: Store) async throws {
        let fixture = try await Fixture(store)
        let page = await fixture.get("/")
        #expect(page.status == 200 && page.headers["Content-Type"] == "text/html; charset=utf-8")
        for handler in ["email.send", "invoice.charge", "legacy.cleanup"] { #expect(page.text.contains("<tr data-handler=\"\(handler)\">")) }
        #expect(page.text.contains("<td class=\"count\" data-status=\"parked\"><a href=\"/timers?status=parked&amp;handler=invoice.charge\">1</a></td>"))
        #expect(page.text.contains("id=\"lag-chart\"") && page.text.contains("id=\"clock-offset\"") && page.text.contains("id=\"instances\""))
        #expect(page.text.contains("<tr data-instance=\"\(fixture.timers.instance)\">"))
        #expect(page.headers["Content-Security-Policy"]?.contains("script-src 'self'") == true && page.headers["X-Frame-Options"] == "DENY")
        await fixture.close()
    }

    @Test("The list filters by status, handler and key prefix, and pages by its cursor with no timer skipped or repeated", arguments: Store.allCases)
    func listAndPaging(store: Store) async throws {
        let fixture = try await Fixture(store)
        let parked = await fixture.get("/timers?status=parked")
        #expect(parked.text.contains("<tr class=\"timer\" data-key=\"invoice/42\">") && !parked.text.contains("data-key=\"email/01\""))
        #expect(await fixture.get("/parked").text.contains("data-key=\"invoice/42\""))
        let byHandler = await fixture.get("/timers?handler=invoice.charge")
        #expect(byHandler.text.contains("data-key=\"invoice/42\"") && !byHandler.text.contains("data-key=\"email/"))
        let byPrefix = await fixture.get("/timers?prefix=email/1")
        #expect(Self.keys(byPrefix.text) == ["email/10", "email/11", "email/12"])

        var seen: [String] = []
        var target: String? = "/timers?prefix=email/&limit=5"
        while let next = target {
            let page = await fixture.get(next)
            seen += Self.keys(page.text)
            target = page.text.firstMatch(of: /id="next-page" href="([^"]+)"/).map { String($0.1).replacingOccurrences(of: "&amp;", with: "&") }
        }
        #expect(seen == (1...12).map { "email/\(String(format: "%02d", $0))" })
        await fixture.close()
    }

    @Test(
        "C17: keys, a payload and an error that are markup are shown as text, never as markup: in the list, on the timer's page and in an action's answer",
        arguments: Store.allCases)
    func escaping(store: Store) async throws {
        let fixture = try await Fixture(store)
        let list = await fixture.get("/timers?prefix=%3C")
        #expect(list.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !list.text.contains("<script>alert"))
        let attribute = await fixture.get("/timers?prefix=%22")
        #expect(attribute.text.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;") && !attribute.text.contains("<img"))
        let page = await fixture.get("/timer?key=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        #expect(page.status == 200 && page.text.contains("<h1 id=\"timer-key\">&lt;script&gt;alert(1)&lt;/script&gt;</h1>"))
        // The payload as its JSON (which writes "/" as "\\/"), escaped.
        #expect(page.text.contains("&lt;\\/pre&gt;&lt;script&gt;alert(2)&lt;\\/script&gt;") && !page.text.contains("<script>alert"))
        let parked = await fixture.get("/timer?key=invoice/42")
        #expect(parked.text.contains("<dd id=\"status\"><span class=\"badge parked\">parked</span></dd>") && parked.text.contains("card declined"))
        await fixture.close()
    }

    @Test(
        "Actions need a login and the session's CSRF token (403 without either); a retry, a handler's pause and resume, and a cancel are carried out and answered with what happened",
        arguments: Store.allCases)
    func actions(store: Store) async throws {
        let fixture = try await Fixture(store)
        #expect(await fixture.post("/actions/retry", ["key": "invoice/42"]).status == 403)
        #expect(await fixture.get("/confirm?action=retry&key=invoice/42").status == 303, "a confirmation page sends to the login")
        #expect(await fixture.post("/login", ["token": "wrong"]).status == 401)
        let (cookie, csrf) = try await fixture.logIn()
        #expect(
            await fixture.post("/actions/retry", ["key": "invoice/42", "csrf": (csrf.hasPrefix("0") ? "1" : "0") + csrf.dropFirst()], cookie: cookie).status
                == 403)
        #expect(await fixture.post("/actions/retry", ["key": "invoice/42"], cookie: cookie).status == 403)

        let confirm = await fixture.get("/confirm?action=retry&key=invoice/42", cookie: cookie)
        #expect(confirm.status == 200 && confirm.text.contains("id=\"confirm\"") && confirm.text.contains("Retry the timer “invoice/42”"))
        let retried = await fixture.post("/actions/retry", ["key": "invoice/42", "csrf": csrf], cookie: cookie)
        #expect(retried.status == 303 && retried.headers["Location"]?.hasPrefix("/timer?key=invoice/42&notice=") == true)
        let answered = await fixture.get(try #require(retried.headers["Location"]), cookie: cookie)
        #expect(answered.text.contains("<div id=\"notice\" class=\"notice\" role=\"status\">Retried “invoice/42”"))
        #expect(
            !(await fixture.get(try #require(retried.headers["Location"])).text.contains("id=\"notice\"")),
            "another browser (no session) sees no answer under the same address")
        #expect(!(await fixture.get("/?notice=Session%20expired", cookie: cookie).text.contains("id=\"notice\"")), "a made-up notice shows nothing")
        let paused = await fixture.post("/actions/pause-handler", ["handler": "email.send", "csrf": csrf], cookie: cookie)
        #expect(paused.status == 303 && paused.headers["Location"]?.hasPrefix("/?notice=") == true)
        #expect(await fixture.get(try #require(paused.headers["Location"]), cookie: cookie).text.contains("Paused the handler “email.send”"))
        #expect(Self.keys(await fixture.get("/timers?status=paused&prefix=email/").text).count == 12)
        let resumed = await fixture.post("/actions/resume-handler", ["handler": "email.send", "csrf": csrf], cookie: cookie)
        let stillPaused = Self.keys(await fixture.get("/timers?status=paused").text)
        #expect(resumed.status == 303 && stillPaused.isEmpty)
        let cancelled = await fixture.post("/actions/cancel", ["key": "email/01", "csrf": csrf], cookie: cookie)
        #expect(cancelled.headers["Location"]?.contains("notice=") == true)
        #expect(try await fixture.timers.timer(key: "email/01") == nil)
        let answer = await fixture.get(try #require(cancelled.headers["Location"]), cookie: cookie)
        #expect(answer.status == 404 && answer.text.contains("<div id=\"notice\" class=\"notice\" role=\"status\">Cancelled “email/01”.</div>"))

        // Logging out takes the session's CSRF token too (another site's form cannot log one out).
        #expect(await fixture.post("/logout", [:], cookie: cookie).status == 403)
        let out = await fixture.post("/logout", ["csrf": csrf], cookie: cookie)
        #expect(out.status == 303 && out.headers["Set-Cookie"]?.contains("Max-Age=0") == true)
        #expect(await fixture.post("/actions/cancel", ["key": "email/02", "csrf": csrf], cookie: cookie).status == 403, "the session is gone")
        await fixture.close()
    }

    @Test("Reading needs the login when the dashboard asks for it; a login's next page is only ever a page of the dashboard")
    func readLogin() async throws {
        let fixture = try await Fixture(.sqlite, readRequiresLogin: true)
        let page = await fixture.get("/timers?status=parked")
        #expect(page.status == 303 && page.headers["Location"] == "/login?next=/timers%3Fstatus%3Dparked")
        #expect(await fixture.get("/assets/dashboard.css").status == 200)
        for next in ["//evil.example/", "https://evil.example/", "/\\evil", "/\t/evil.example", "/\n/evil.example", "/%09ok", "/ x"] {
            let login = await fixture.post("/login", ["token": Fixture.token, "next": next])
            #expect(login.headers["Location"] == (next == "/%09ok" ? "/%09ok" : "/"), "next \(next)")
        }
        let (cookie, _) = try await fixture.logIn()
        #expect(await fixture.get("/timers?status=parked", cookie: cookie).status == 200)
        await fixture.close()
    }

    @Test(
        "The orphans page lists the timers whose handler no live instance runs (as the instances recorded themselves, not the dashboard's runner); an unknown page is 404",
        arguments: Store.allCases)
    func orphansAndErrors(store: Store) async throws {
        let fixture = try await Fixture(store)
        let orphans = await fixture.get("/orphans")
        #expect(orphans.status == 200 && Self.keys(orphans.text) == ["cleanup/old"])
        #expect(await fixture.get("/nowhere").status == 404)
        #expect(!Self.keys(orphans.text).contains("email/01"), "a timer whose handler an instance runs is no orphan")
        await fixture.close()
    }

    @Test(
        "Open for reading on loopback, the dashboard answers only to a loopback name (DNS rebinding is refused); HEAD has the GET's length; another method is 405 with Allow"
    )
    func hostsAndMethods() async throws {
        let fixture = try await Fixture(.sqlite)
        for host in ["127.0.0.1:8080", "localhost", "[::1]:8080", "LOCALHOST:1"] { #expect(await fixture.get("/", host: host).status == 200, "\(host)") }
        for host in ["evil.example:8080", "127.0.0.1.evil.example", ""] { #expect(await fixture.get("/", host: host).status == 403, "\(host)") }
        // A page that reads the same twice (the others show times that move between two requests).
        let get = await fixture.get("/login?next=/timers")
        let head = await fixture.get("/login?next=/timers", method: "HEAD")
        #expect(head.status == 200 && head.text.count == get.text.count)
        let response = await fixture.dashboard.respond(
            to: DashboardRequest(method: "DELETE", target: "/", headers: Fixture.headers(cookie: nil, host: "localhost")))
        #expect(response.status == 405 && response.headers.contains { $0.name == "Allow" && $0.value == "GET, HEAD, POST" })
        await fixture.close()
    }

    static func keys(_ page: String) -> [String] {
        page.matches(of: /<tr class="timer" data-key="([^"]*)">/).map { String($0.1) }
    }
}
