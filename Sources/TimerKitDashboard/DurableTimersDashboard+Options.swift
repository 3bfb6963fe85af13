import Foundation

extension DurableTimersDashboard {
    /// Where the dashboard is mounted, who may do what, and how much it shows.
    public struct Options: Sendable {
        /// The path the dashboard is mounted at in the server (`""` at the root, `/admin/timers`
        /// below it): every link and form starts with it.
        public var mountPath: String
        /// The token a login asks for; `nil` refuses every login, and so every action.
        public var token: String?
        /// Whether reading needs a login too: on by default; `timerkit durable serve` turns it off
        /// only on a loopback address.
        public var readRequiresLogin: Bool
        /// The most bytes of a payload a timer's page shows (as text): 4 KiB by default.
        public var payloadLimit: Int
        /// Timers per page of a list: 50 by default (at most 500).
        public var pageSize: Int
        /// How often a page refreshes itself while it is visible (with JavaScript): 5 s by
        /// default; `nil` never. Taken as at least a second and at most a day.
        public var refreshInterval: Duration?
        /// How late a repeating timer must be to be listed as late on the overview: 60 s by default.
        public var lateBy: Duration
        /// Whether the session cookie is marked `Secure` (sent over HTTPS only): set it when a
        /// TLS proxy carries the dashboard.
        public var secureCookie: Bool

        /// The options; see each property.
        public init(
            mountPath: String = "", token: String?, readRequiresLogin: Bool = true, payloadLimit: Int = 4_096, pageSize: Int = 50,
            refreshInterval: Duration? = .seconds(5), lateBy: Duration = .seconds(60), secureCookie: Bool = false
        ) {
            var mount = mountPath
            while mount.hasSuffix("/") { mount.removeLast() }
            self.mountPath = mount.isEmpty || mount.hasPrefix("/") ? mount : "/" + mount
            self.token = token.flatMap { $0.isEmpty ? nil : $0 }
            self.readRequiresLogin = readRequiresLogin
            self.payloadLimit = max(0, payloadLimit)
            self.pageSize = min(max(1, pageSize), 500)
            self.refreshInterval = refreshInterval
            self.lateBy = lateBy
            self.secureCookie = secureCookie
        }
    }
}
