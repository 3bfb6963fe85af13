import Foundation

// Logging in with the dashboard's token, and out.

extension Page {
    func login(error: String?) -> DashboardResponse {
        let next = safeNext(request.query["next"] ?? request.form["next"])
        let unavailable: HTML =
            options.token == nil ? "<p id=\"error\" class=\"error\">This dashboard has no token: logging in, and so every action, is off.</p>" : ""
        let failure: HTML = error.map { "<p id=\"error\" class=\"error\" role=\"alert\">\($0)</p>" } ?? ""
        let body: HTML = """
            <h1>Log in</h1>
            \(unavailable)\(failure)
            <form id="login" method="post" action="\(link("/login"))" class="login">
            <input type="hidden" name="next" value="\(next)">
            <label>Token <input name="token" type="password" autocomplete="current-password" required></label>
            <button id="login-button" type="submit">Log in</button>
            </form>
            <p class="meta">The token is the one the dashboard was started with (<code>timerkit durable serve</code> prints it, or takes <code>--token</code>).</p>
            """
        var response = document(title: "Log in", live: false, body)
        if error != nil { response.status = 401 }
        return response
    }

    func logIn() async -> DashboardResponse {
        guard let token = options.token, let given = request.form["token"], Sessions.matches(given, token) else {
            // A second per wrong token: guessing one is slow.
            try? await Task.sleep(for: .seconds(1))
            return login(error: "That is not the dashboard's token.")
        }
        let session = dashboard.sessions.start()
        let next = safeNext(request.form["next"])
        return DashboardResponse(
            status: 303,
            headers: Self.securityHeaders + [("Location", options.mountPath + next), ("Set-Cookie", cookie(session.id, maxAge: Int(Sessions.lifetime)))],
            body: Data())
    }

    func logOut() -> DashboardResponse {
        // Only the dashboard's own form logs out: another site's cannot.
        guard let session, let csrf = request.form["csrf"], Sessions.matches(csrf, session.csrf) else {
            return plain(403, "Forbidden: log out from the dashboard's own form")
        }
        dashboard.sessions.end(session.id)
        return redirect(to: "/", headers: [("Set-Cookie", cookie("", maxAge: 0))])
    }

    private func cookie(_ value: String, maxAge: Int) -> String {
        "\(Sessions.cookie)=\(value); Path=\(options.mountPath.isEmpty ? "/" : options.mountPath); Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (options.secureCookie ? "; Secure" : "")
    }

    /// A page of this dashboard to go to after logging in: a path starting with one `/` (never
    /// another site's address).
    private func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"),
            next.unicodeScalars.allSatisfy({ Self.nextCharacters.contains($0) })
        else { return "/" }
        return next
    }

    /// What a page address may hold: no control characters (a browser drops a tab, which makes
    /// `/\t/host` another site's `//host`), no backslash, no spaces.
    private static let nextCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.~%?&=+-:,;@!$*()'")
}
