import Foundation
import TimerKitDurable

// The actions: each asked for on a confirmation page (a GET that changes nothing), carried out by
// a POST with the session's CSRF token, and answered with what happened on the page it came from.

extension Page {
    /// An action the dashboard offers.
    enum Action: String, CaseIterable {
        case retry, fire, cancel, pause, resume
        case pauseHandler = "pause-handler"
        case resumeHandler = "resume-handler"
        case pauseNamespace = "pause-namespace"
        case resumeNamespace = "resume-namespace"

        /// What the confirmation page asks.
        func question(key: String, handler: String) -> String {
            switch self {
            case .retry: "Retry the timer “\(key)” now, with its attempts cleared?"
            case .fire:
                "Run the timer “\(key)”'s next occurrence now, on an instance that has its handler? A one-shot then ends; a repeating timer goes on from the occurrence after."
            case .cancel: "Cancel the timer “\(key)”? It is removed, and a run under way is cancelled."
            case .pause: "Pause the timer “\(key)”? It does not run until it is resumed."
            case .resume: "Resume the timer “\(key)”?"
            case .pauseHandler: "Pause every timer of the handler “\(handler)”, on every instance?"
            case .resumeHandler: "Resume the timers of the handler “\(handler)”?"
            case .pauseNamespace: "Pause every timer of the namespace, on every instance?"
            case .resumeNamespace: "Resume the namespace?"
            }
        }

        var needsKey: Bool { [.retry, .fire, .cancel, .pause, .resume].contains(self) }
        var needsHandler: Bool { [.pauseHandler, .resumeHandler].contains(self) }
    }

    func confirm() -> DashboardResponse {
        guard let session else {
            return redirect(to: "/login", query: [("next", request.path + DurableTimersDashboard.queryText(request.query))])
        }
        guard let action = request.query["action"].flatMap(Action.init(rawValue:)) else { return notFound() }
        let key = request.query["key"] ?? ""
        let handler = request.query["handler"] ?? ""
        let back = back(action, key: key, handler: handler)
        let keyField: HTML = action.needsKey ? "<input type=\"hidden\" name=\"key\" value=\"\(key)\">" : ""
        let handlerField: HTML = action.needsHandler ? "<input type=\"hidden\" name=\"handler\" value=\"\(handler)\">" : ""
        let body: HTML = """
            <h1>Confirm</h1>
            <form id="confirm" method="post" action="\(link("/actions/" + action.rawValue))" class="confirm">
            <p class="question">\(action.question(key: key, handler: handler))</p>
            <input type="hidden" name="csrf" value="\(session.csrf)">
            \(keyField)\(handlerField)
            <button id="confirm-button" type="submit" class="danger">Confirm</button>
            <a id="cancel-link" href="\(link(back.path, back.query))">Back</a>
            </form>
            """
        return document(title: "Confirm", live: false, body)
    }

    func act(_ name: String) async throws -> DashboardResponse {
        guard let session, let csrf = request.form["csrf"], Sessions.matches(csrf, session.csrf) else {
            return plain(403, "Forbidden: log in, and act from the dashboard's own forms")
        }
        guard let action = Action(rawValue: name) else { return notFound() }
        let key = request.form["key"] ?? ""
        let handler = request.form["handler"] ?? ""
        let back = back(action, key: key, handler: handler)
        let (message, failed): (String, Bool)
        do {
            (message, failed) = try await perform(action, key: key, handler: handler)
        } catch {
            (message, failed) = ("\(action.rawValue) failed: \(error)", true)
        }
        let notice = dashboard.sessions.post(message, failed: failed, for: session)
        return redirect(to: back.path, query: back.query + [("notice", notice)])
    }

    /// Carries out `action`; what happened, and whether it failed.
    private func perform(_ action: Action, key: String, handler: String) async throws(DurableTimerError) -> (String, Bool) {
        switch action {
        case .retry:
            do {
                try await timers.retry(key: key)
                return ("Retried “\(key)”: it runs at its occurrence, with its attempts cleared.", false)
            } catch .notFound {
                return ("No timer “\(key)” to retry (it is gone, or running).", true)
            }
        case .fire:
            return try await timers.runNow(key: key)
                ? ("“\(key)” runs now, on an instance that has its handler.", false)
                : ("“\(key)” was not run: it is gone, parked, paused, running or due already.", true)
        case .cancel:
            switch try await timers.cancel(key: key) {
            case .cancelled: return ("Cancelled “\(key)”.", false)
            case .cancelledWhileRunning: return ("Cancelled “\(key)”; its run under way was cancelled too.", false)
            case .notFound: return ("No timer “\(key)” to cancel.", true)
            }
        case .pause:
            return try await timers.pause(key: key) ? ("Paused “\(key)”.", false) : ("“\(key)” was not paused: no timer is stored under it.", true)
        case .resume:
            return try await timers.resume(key: key)
                ? ("Resumed “\(key)”.", false)
                : ("“\(key)” was not resumed: it is not paused itself (its handler or the namespace may be; resume those).", true)
        case .pauseHandler:
            let count = try await timers.pause(handler: handler)
            return ("Paused the handler “\(handler)”: \(count) timer(s) held, and those scheduled for it meanwhile are stored paused.", false)
        case .resumeHandler:
            let count = try await timers.resume(handler: handler)
            return ("Resumed the handler “\(handler)”: \(count) timer(s) released.", false)
        case .pauseNamespace:
            let count = try await timers.pauseNamespace()
            return ("Paused the namespace: \(count) timer(s) held.", false)
        case .resumeNamespace:
            let count = try await timers.resumeNamespace()
            return ("Resumed the namespace: \(count) timer(s) released.", false)
        }
    }

    /// Where an action's answer is shown: the timer's page, or the overview.
    private func back(_ action: Action, key: String, handler: String) -> (path: String, query: [(String, String?)]) {
        action.needsKey ? ("/timer", [("key", key)]) : ("/", [])
    }
}
