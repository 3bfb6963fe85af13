import Foundation

/// The dashboard's answer to a ``DashboardRequest``: write it with the server carrying the dashboard.
public struct DashboardResponse: Sendable {
    /// The HTTP status: 200, 303 (after an action or a login), 401, 403, 404, 405 or 500.
    public var status: Int
    /// The header fields: `Content-Type`, `Location`, `Set-Cookie`, and the security headers
    /// (a `Content-Security-Policy` allowing only the dashboard's own script and style, no
    /// framing, `nosniff`, no caching).
    public var headers: [(name: String, value: String)]
    /// The body (UTF-8 HTML, CSS or JavaScript).
    public var body: Data

    /// Makes a response.
    public init(status: Int, headers: [(name: String, value: String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
