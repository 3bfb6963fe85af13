import Foundation
import Synchronization

/// The logged-in sessions, in memory: a random id in an `HttpOnly` cookie, and the CSRF token the
/// session's forms carry. They end after 12 hours, at a logout, or when the process ends.
final class Sessions: Sendable {
    struct Session: Sendable {
        let id: String
        let csrf: String
        let expires: Date
    }

    static let cookie = "timerkit_session"
    static let lifetime: TimeInterval = 12 * 3_600

    private let state = Mutex<[String: Session]>([:])

    func session(_ id: String) -> Session? {
        let now = Date()
        return state.withLock { sessions in
            sessions = sessions.filter { $0.value.expires > now }
            return sessions[id]
        }
    }

    func start() -> Session {
        let session = Session(id: Self.random(), csrf: Self.random(), expires: Date().addingTimeInterval(Self.lifetime))
        state.withLock { $0[session.id] = session }
        return session
    }

    func end(_ id: String) {
        _ = state.withLock { $0.removeValue(forKey: id) }
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
