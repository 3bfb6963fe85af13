import Foundation

/// An HTTP request as the dashboard reads it, from whichever server carries it: `timerkit
/// durable serve`, or a route of the application's own server (see ``DurableTimersDashboard``).
public struct DashboardRequest: Sendable {
    /// The method, upper case: `GET`, `HEAD` or `POST` (the dashboard answers others with 405).
    public var method: String
    /// The path below the dashboard's mount point, starting with `/` (the percent-decoded path).
    public var path: String
    /// The query's fields (the first value of each name).
    public var query: [String: String]
    /// A `POST`'s form fields (`application/x-www-form-urlencoded`; the first value of each name).
    public var form: [String: String]
    /// The request's cookies.
    public var cookies: [String: String]
    /// The `Host` header's host, without its port (`nil` without one): a dashboard open for
    /// reading answers only to a loopback name, so that a page elsewhere cannot read it through
    /// DNS rebinding.
    public var host: String?

    /// Reads a request.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - target: The request target below the mount point: its path and query (`/timers?status=parked`).
    ///   - headers: The header fields (`Cookie` is read; names compared without case).
    ///   - body: The body (read as a form for `POST`; at most 64 KiB are read).
    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.method = method.uppercased()
        let (path, query) = target.firstIndex(of: "?").map { (target[..<$0], target[target.index(after: $0)...]) } ?? (target[...], "")
        let decodedPath = String(path).removingPercentEncoding ?? String(path)
        self.path = decodedPath.isEmpty ? "/" : decodedPath
        self.query = Self.firstValues(FormEncoding.pairs(query))
        self.form = self.method == "POST" ? Self.firstValues(FormEncoding.pairs(Substring(decoding: body.prefix(65_536), as: UTF8.self))) : [:]
        var cookies: [String: String] = [:]
        for (name, value) in headers where name.lowercased() == "cookie" {
            for pair in value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                if cookies[name] == nil { cookies[name] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        self.cookies = cookies
        self.host = headers.first { $0.name.lowercased() == "host" }.map { Self.hostName($0.value) }
    }

    /// `localhost:8080` → `localhost`, `[::1]:8080` → `::1`.
    private static func hostName(_ value: String) -> String {
        let value = value.trimmingCharacters(in: .whitespaces).lowercased()
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") { return String(value[value.index(after: value.startIndex)..<close]) }
        return String(value.prefix { $0 != ":" })
    }

    private static func firstValues(_ pairs: [(String, String)]) -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in pairs where values[name] == nil { values[name] = value }
        return values
    }
}
