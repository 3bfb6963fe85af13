import Foundation
import Synchronization

/// The logged-in sessions, in memory: a random id in an `HttpOnly` cookie, the CSRF token the
/// session's forms carry, and the answers of its actions waiting to be shown. A session ends after
/// 12 hours, at a logout, or when the process ends; at most 1,000 live at once (the oldest goes).
final class Sessions: Sendable {
    struct Session: Sendable {
        let id: String
        let csrf: String
        let expires: Date
    }

    /// What an action did, shown once on the page it sends to.
    struct Notice: Sendable {
        let session: String
        let text: String
        let failed: Bool
    }

    private struct State {
        var sessions: [String: Session] = [:]
        var notices: [String: Notice] = [:]
    }

    static let cookie = "timerkit_session"
    static let lifetime: TimeInterval = 12 * 3_600
    static let maximumSessions = 1_000

    private let state = Mutex(State())

    func session(_ id: String) -> Session? {
        let now = Date()
        return state.withLock { state in
            guard let session = state.sessions[id] else { return nil }
            guard session.expires > now else {
                state.sessions[id] = nil
                return nil
            }
            return session
        }
    }

    func start() -> Session {
        let now = Date()
        let session = Session(id: Self.random(), csrf: Self.random(), expires: now.addingTimeInterval(Self.lifetime))
        state.withLock { state in
            if state.sessions.count >= Self.maximumSessions {
                state.sessions = state.sessions.filter { $0.value.expires > now }
                if state.sessions.count >= Self.maximumSessions, let oldest = state.sessions.values.min(by: { $0.expires < $1.expires }) {
                    state.sessions[oldest.id] = nil
                }
            }
            state.sessions[session.id] = session
        }
        return session
    }

    func end(_ id: String) {
        state.withLock { state in
            state.sessions[id] = nil
            state.notices = state.notices.filter { $0.value.session != id }
        }
    }

    /// Keeps an action's answer for the session's next page; its id goes in the page's address.
    func post(_ text: String, failed: Bool, for session: Session) -> String {
        let id = String(Self.random().prefix(16))
        state.withLock { state in
            if state.notices.count >= 4 * Self.maximumSessions { state.notices.removeAll() }
            state.notices[id] = Notice(session: session.id, text: text, failed: failed)
        }
        return id
    }

    /// The answer `id` names, if it is the session's (a link with another session's, or a made-up
    /// one, shows nothing).
    func notice(_ id: String, for session: Session) -> Notice? {
        state.withLock { state in
            guard let notice = state.notices[id], notice.session == session.id else { return nil }
            return notice
        }
    }

    /// 32 random bytes as hex.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Whether two secrets are equal, in a time that does not depend on where they differ.
    static func matches(_ given: String, _ expected: String) -> Bool {
        let (a, b) = (Array(given.utf8), Array(expected.utf8))
        var difference = a.count ^ b.count
        for index in 0..<max(a.count, b.count) {
            difference |= Int((index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0))
        }
        return difference == 0
    }
}
