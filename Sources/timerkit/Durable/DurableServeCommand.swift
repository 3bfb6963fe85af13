import ArgumentParser
import Foundation
import TimerKitDashboard
import TimerKitDurable

#if canImport(NIOHTTP1)
import NIOCore
#endif

/// `timerkit durable serve`: the dashboard of durable timers in a browser.
struct DurableServeCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a web dashboard of the durable timers: the fleet at a glance, a timer's history, and actions.",
        usage: """
            timerkit durable serve [--db <database>] [--listen <address>] [--token <token>] [<options>]
            """,
        discussion: """
            Opens the namespace's timers and serves the dashboard over HTTP until interrupted: \
            the overview (counts by status and handler, the lateness of recent runs, late timers, \
            the instances), the timers by status, handler and key prefix a page at a time, a \
            timer's fields, why it waits, its next occurrences and its runs, the parked timers \
            and the orphans; and the actions (retry, run now, cancel, pause and resume of a \
            timer, a handler or the namespace), each confirmed.

            It listens on 127.0.0.1:8080 unless told otherwise (--listen HOST:PORT; port 0 picks \
            a free one). Actions need a login with the token: --token, $TIMERKIT_DASHBOARD_TOKEN, \
            or one made up and printed at the start. Reading is open on a loopback address, and \
            needs the login on any other (--read-login asks for it on loopback too). The line \
            "timerkit durable serve: listening on http://HOST:PORT" on standard error says it is \
            ready.
            """)

    @OptionGroup var store: DurableStoreOptions

    @Option(help: ArgumentHelp("Where to listen: HOST:PORT (port 0: a free one).", valueName: "address"))
    var listen = "127.0.0.1:8080"

    @Option(help: ArgumentHelp("The token a login asks for (default: $TIMERKIT_DASHBOARD_TOKEN, else a new one, printed).", valueName: "token"))
    var token: String?

    @Flag(help: "Ask for the login to read too, on a loopback address (always asked on any other).")
    var readLogin = false

    @Flag(help: "Mark the session cookie Secure (behind a TLS proxy).")
    var secureCookie = false

    func perform() async throws {
        let (host, port) = try Self.address(listen)
        let timers = try await store.open()
        let given = token ?? ProcessInfo.processInfo.environment["TIMERKIT_DASHBOARD_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        let token = given ?? Self.newToken()
        if given == nil { Output.error("timerkit durable serve: log in with the token \(token)") }
        let loopback = DurableTimersDashboard.isLoopback(host)
        let dashboard = DurableTimersDashboard(
            timers: timers, options: .init(token: token, readRequiresLogin: readLogin || !loopback, secureCookie: secureCookie))
        #if canImport(NIOHTTP1)
        try await DashboardHTTPServer(dashboard: dashboard).run(host: host, port: port) { address in
            let shown = address.ipAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? host
            Output.error("timerkit durable serve: listening on http://\(shown):\(address.port ?? port)")
        }
        #else
        throw DurableFailure("this build has no HTTP server (it was built without SwiftNIO)", status: DurableExit.unavailable)
        #endif
    }

    /// `HOST:PORT`, `[IPv6]:PORT` or `:PORT` (loopback).
    static func address(_ text: String) throws(UsageError) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw UsageError("--listen must be HOST:PORT (a port from 0 to 65535), got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// 20 random characters from an alphabet without look-alikes.
    static func newToken() -> String {
        let alphabet = Array("abcdefghjkmnpqrstuvwxyz23456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }
}
