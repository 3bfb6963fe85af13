#if canImport(TimerKitPostgres)
import Foundation
import PostgresNIO
@testable import TimerKitPostgres

/// `Scripts/fault-proxy.py` between an instance and the test server: a TCP proxy that adds
/// latency, cuts connections, or leaves them half-open on command.
final class FaultProxy: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()
    private let lock = NSLock()
    /// The port it listens on (127.0.0.1).
    let port: Int

    init() throws {
        guard let server = TestServer.url, let url = URL(string: server), let host = url.host, let serverPort = url.port else { throw TestServer.Missing() }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../Scripts/fault-proxy.py").standardized
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, host, String(serverPort)]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var port = 0
        if let line = Self.readLine(output.fileHandleForReading, &buffer) { port = Int(line) ?? 0 }
        guard port > 0 else { throw ProxyFailed(message: "the fault proxy did not start") }
        self.port = port
    }

    deinit { stop() }

    /// Ends the proxy: its connections close.
    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
    }

    /// Sends `command` and returns what the proxy printed before its "ok".
    @discardableResult
    func send(_ command: String) throws -> [String] {
        try lock.withLock {
            input.fileHandleForWriting.write(Data((command + "\n").utf8))
            var lines: [String] = []
            while let line = Self.readLine(output.fileHandleForReading, &buffer) {
                if line == "ok" { return lines }
                lines.append(line)
            }
            throw ProxyFailed(message: "the fault proxy ended")
        }
    }

    /// How many connections are open, not black-holed, and have sent LISTEN.
    func listening() throws -> Int {
        let words = try send("stats").first?.split(separator: " ") ?? []
        guard let index = words.firstIndex(of: "listening"), index + 1 < words.count else { return 0 }
        return Int(words[index + 1]) ?? 0
    }

    /// The test server's configuration, through the proxy.
    func configuration() throws -> PostgresClient.Configuration {
        guard let server = TestServer.url, var components = URLComponents(string: server) else { throw TestServer.Missing() }
        components.port = port
        guard let url = components.string, let configuration = PostgresURL.configuration(url) else { throw TestServer.Missing() }
        return configuration
    }

    private static func readLine(_ handle: FileHandle, _ buffer: inout Data) -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    struct ProxyFailed: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
#endif
