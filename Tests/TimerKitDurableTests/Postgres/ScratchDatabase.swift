#if canImport(TimerKitPostgres)
import Foundation
import PostgresNIO
@testable import TimerKitDurable
@testable import TimerKitPostgres

/// Options for runners on the test server: errors ignored, and a generous call timeout (under
/// load — the suite beside busy loops on every core, the server on the same 2 cores — a statement
/// took over the default 5 s once in CI).
func serverOptions(_ change: (inout DurableTimers.Options) -> Void = { _ in }) -> DurableTimers.Options {
    var options = DurableTimers.Options()
    options.onError = { _ in }
    options.busyTimeout = .seconds(30)
    change(&options)
    return options
}

/// A database of the test cluster, dropped (connections and all) by ``drop()``.
struct ScratchDatabase {
    let name: String

    init() throws {
        name = "timerkit_scratch_\(UUID().uuidString.prefix(8).lowercased())"
        try Self.psql(TestServer.url ?? "", "CREATE DATABASE \(name)")
    }

    /// The URL of this database, as `user` (the cluster's superuser when `nil`).
    func url(as user: String? = nil) throws -> String {
        guard let server = TestServer.url, let base = URL(string: server) else { throw TestServer.Missing() }
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)
        components?.path = "/\(name)"
        if let user { components?.user = user }
        return components?.string ?? ""
    }

    func configuration(as user: String? = nil) throws -> PostgresClient.Configuration {
        guard let configuration = PostgresURL.configuration(try url(as: user)) else { throw TestServer.Missing() }
        return configuration
    }

    func drop() { _ = try? Self.psql(TestServer.url ?? "", "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }

    /// Runs `sql` with psql (as a DBA would), stopping at the first error.
    /// - Returns: What psql printed.
    @discardableResult
    static func psql(_ url: String, _ sql: String) throws -> String {
        guard !url.isEmpty else { throw TestServer.Missing() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-\(UUID().uuidString).sql")
        try Data(sql.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-f", file.path]
        let output = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw PsqlFailed(output: text) }
        return text
    }

    @discardableResult
    func psql(_ sql: String, as user: String? = nil) throws -> String { try Self.psql(try url(as: user), sql) }
}

struct PsqlFailed: Error, CustomStringConvertible {
    var output: String
    var description: String { "psql failed: \(output)" }
}
#endif
