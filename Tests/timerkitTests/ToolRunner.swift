#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Runs the built `timerkit` binary and collects what it wrote.
struct ToolRunner {
    struct Outcome {
        var status: Int32
        var output: String
        var error: String
        /// How long it ran, in seconds.
        var seconds: Double
    }

    /// The folder that holds the test bundle, and so the built `timerkit` binary.
    static var productsDirectory: URL {
        #if os(macOS)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        #endif
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    static var executable: URL { productsDirectory.appendingPathComponent("timerkit") }

    /// Starts the tool, sends it SIGINT (Ctrl-C) after `delay` if given, and waits for it.
    static func run(_ arguments: [String], environment: [String: String] = [:], interruptAfter delay: Duration? = nil) throws -> Outcome {
        try run(arguments, environment: environment) { process in
            guard let delay else { return }
            usleep(UInt32(delay.components.seconds * 1_000_000 + delay.components.attoseconds / 1_000_000_000_000))
            kill(process.processIdentifier, SIGINT)
        }
    }

    /// Starts the tool; `onStart` gets the process (to signal it) once it runs.
    static func run(
        _ arguments: [String], environment: [String: String] = [:],
        onStart: (Process) throws -> Void
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged["NO_COLOR"] = nil
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        let began = Date()
        try process.run()
        // Read both pipes while the tool runs, so that neither can fill up and block it.
        let collected = Collected()
        let group = DispatchGroup()
        for (pipe, isError) in [(output, false), (error, true)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.set(data, isError: isError)
                group.leave()
            }
        }
        try onStart(process)
        process.waitUntilExit()
        group.wait()
        return Outcome(
            status: process.terminationStatus, output: collected.text(isError: false), error: collected.text(isError: true),
            seconds: Date().timeIntervalSince(began))
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var output = Data()
        private var error = Data()

        func append(_ data: Data) {
            lock.lock()
            output.append(data)
            lock.unlock()
        }

        func set(_ data: Data, isError: Bool) {
            lock.lock()
            if isError { error = data } else { output = data }
            lock.unlock()
        }

        func text(isError: Bool) -> String {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: isError ? error : output, as: UTF8.self)
        }
    }
}

/// A pseudo-terminal whose slave end is a tool's terminal: the test reads what the tool draws and
/// types keys into it. ``close()`` stops the reader and closes both ends.
final class PseudoTerminal: @unchecked Sendable {
    let master: Int32
    let slave: Int32
    private let received = ToolRunner.Collected()
    private let stopped = Flag()
    private let readerDone = DispatchSemaphore(value: 0)

    init() throws {
        #if os(Linux)
        // posix_openpt, grantpt, unlockpt and ptsname are not in Swift's Glibc module: the same
        // through /dev/ptmx and its ioctls (TIOCSPTLCK, TIOCGPTN; `_IOW`/`_IOR` macros Swift
        // cannot import, their values on every Linux architecture Swift supports).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw POSIXError(.ENODEV)
        }
        let name = "/dev/pts/\(number)"
        #else
        master = posix_openpt(O_RDWR | O_NOCTTY)
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, let path = ptsname(master) else {
            throw POSIXError(.ENODEV)
        }
        let name = String(cString: path)
        #endif
        slave = open(name, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw POSIXError(.ENODEV) }
        var size = winsize(ws_row: 24, ws_col: 80, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(slave, UInt(TIOCSWINSZ), &size)
        // The reader holds what it needs, not the terminal: polls so that close() can stop it.
        let (master, received, stopped, done) = (master, received, stopped, readerDone)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            while !stopped.isSet {
                guard poll(&descriptor, 1, 20) > 0 else { continue }
                let count = read(master, &buffer, buffer.count)
                guard count > 0 else { break }
                received.append(Data(buffer[0..<count]))
            }
            done.signal()
        }.start()
    }

    /// Stops the reader and closes both ends.
    func close() {
        stopped.set()
        readerDone.wait()
        closeDescriptor(slave)
        closeDescriptor(master)
    }

    /// Everything the tool has drawn so far.
    var text: String { received.text(isError: false) }

    /// Types `text`.
    func type(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) }
    }

    /// Waits until the drawn text satisfies `condition` (polling; at most `seconds`).
    func wait(seconds: Double = 20, until condition: (String) -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition(text) { return true }
            usleep(10_000)
        }
        return condition(text)
    }

    /// Whether the terminal is back in its ordinary (line-at-a-time, echoing) mode.
    var isCanonicalWithEcho: Bool {
        var settings = termios()
        guard tcgetattr(slave, &settings) == 0 else { return false }
        let wanted = tcflag_t(ICANON | ECHO)
        return settings.c_lflag & wanted == wanted
    }
}

/// `close(2)`, out of the reach of ``PseudoTerminal/close()``'s name.
private func closeDescriptor(_ descriptor: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(descriptor)
    #else
    _ = Darwin.close(descriptor)
    #endif
}

/// A flag one thread sets and another reads.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
