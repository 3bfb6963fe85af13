import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the built `timerkit` binary and collects what it wrote.
///
/// Processes are started with `posix_spawn` and waited for with `waitpid` on threads of their own,
/// never on the test's thread: a test waiting for a child does not hold one of the few threads of
/// Swift's cooperative pool (on 2 cores, two blocked tests would starve every other test), and no
/// run-loop machinery is involved (Foundation's `Process.waitUntilExit()` was seen to miss a
/// child's exit under load).
enum ToolRunner {
    struct Outcome {
        var status: Int32
        var output: String
        var error: String
        /// How long it ran, in seconds.
        var seconds: Double
        /// The wall-clock time just before the tool was started.
        var began = Date()
    }

    /// The folder that holds the test bundle, and so the built `timerkit` binary. On macOS the
    /// tests run inside a helper process that loads the `.xctest` bundle, so the bundle of a class
    /// of this module says where it is; on Linux the test binary itself is the first argument.
    static var productsDirectory: URL {
        #if canImport(Darwin)
        return Bundle(for: BundleMarker.self).bundleURL.deletingLastPathComponent()
        #else
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        #endif
    }

    /// A class of this test module, for ``productsDirectory``.
    private final class BundleMarker {}

    static var executable: URL { productsDirectory.appendingPathComponent("timerkit") }

    /// A command that prints the system clock as seconds since 1970 with six decimals, on Linux and
    /// macOS alike (`date +%N` is GNU's; Perl and its Time::HiRes ship with both).
    static let printTime = ["perl", "-MTime::HiRes=time", "-e", "printf(\"%.6f\\n\", time)"]

    /// When a test sends the tool SIGINT (Ctrl-C): once the tool catches the signal, and after its
    /// output contains `marker` if one is given (the command it runs has started).
    struct Interrupt {
        var marker: String?
        static let whenReady = Interrupt(marker: nil)
        static func afterOutput(_ marker: String) -> Interrupt { Interrupt(marker: marker) }
    }

    /// Runs the tool with its output in pipes, and interrupts it as asked.
    static func run(_ arguments: [String], environment: [String: String] = [:], interrupt: Interrupt? = nil) async throws -> Outcome {
        let began = Date()
        var output: [Int32] = [0, 0]
        var errors: [Int32] = [0, 0]
        guard closeOnExecPipe(&output), closeOnExecPipe(&errors) else { throw POSIXError(.EMFILE) }
        let pid: pid_t
        do {
            pid = try spawn(arguments, environment: environment, input: nil, output: output[1], error: errors[1], closing: [output[0], errors[0]])
        } catch {
            for descriptor in output + errors { closeDescriptor(descriptor) }
            throw error
        }
        closeDescriptor(output[1])
        closeDescriptor(errors[1])
        let collected = (output: Collected(), error: Collected())
        async let outputDone: Void = readToEnd(output[0], into: collected.output)
        async let errorDone: Void = readToEnd(errors[0], into: collected.error)
        if let interrupt {
            _ = await isCatching(SIGINT, pid: pid)
            if let marker = interrupt.marker { _ = await eventually { collected.output.text.contains(marker) } }
            kill(pid, SIGINT)
        }
        let status = await waitForExit(pid)
        _ = await (outputDone, errorDone)
        return Outcome(
            status: status, output: collected.output.text, error: collected.error.text, seconds: Date().timeIntervalSince(began), began: began)
    }

    /// Waits (at most 30 s) until the process has a handler for `signal` — it is ready for Ctrl-C —
    /// as `/proc/PID/status` tells; elsewhere, half a second.
    static func isCatching(_ signal: Int32, pid: pid_t) async -> Bool {
        #if os(Linux)
        await eventually {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
                let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
            else { return false }
            return mask & (1 << UInt64(signal - 1)) != 0
        }
        #else
        try? await Task.sleep(for: .milliseconds(500))
        return true
        #endif
    }

    /// Whether the child `pid` has stopped (job control), as `waitpid` reports it: once per stop.
    static func hasStopped(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG | WUNTRACED) == pid && status & 0xff == 0x7f
    }

    /// Polls `condition` every 10 ms for at most 30 s.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(30)
        while Date() < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    /// Starts the tool with the given descriptors as its standard input (or /dev/null), output and
    /// error, in the environment of the tests with `NO_COLOR` removed and `environment` added; the
    /// child has no signal blocked.
    static func spawn(
        _ arguments: [String], environment: [String: String] = [:], input: Int32?, output: Int32, error: Int32, closing: [Int32] = [],
        controllingTerminal: String? = nil
    ) throws -> pid_t {
        // Opaque pointers on Darwin (set by `init`), structures on Glibc.
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let controllingTerminal {
            // A new session, whose first terminal opened (without O_NOCTTY) becomes its
            // controlling terminal, with the tool's group in the foreground: as a shell runs a job.
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, controllingTerminal, O_RDWR, 0)
        } else if let input {
            posix_spawn_file_actions_adddup2(&actions, input, STDIN_FILENO)
        } else {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, output, STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, error, STDERR_FILENO)
        for descriptor in closing { posix_spawn_file_actions_addclose(&actions, descriptor) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        #if os(Linux)
        let newSession: Int32 = 0x80  // POSIX_SPAWN_SETSID, which Swift's Glibc module leaves out
        #else
        let newSession = Int32(POSIX_SPAWN_SETSID)
        #endif
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | (controllingTerminal == nil ? 0 : newSession)))

        var variables = ProcessInfo.processInfo.environment
        variables["NO_COLOR"] = nil
        for (key, value) in environment { variables[key] = value }
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let result = descriptorLock.withLock { _ in posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp) }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        return pid
    }

    /// The child's exit status (128 + the signal's number if a signal ended it), waited for on a
    /// thread of its own.
    static func waitForExit(_ pid: pid_t) async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                let signal = status & 0x7f
                continuation.resume(returning: signal == 0 ? (status >> 8) & 0xff : 128 + signal)
            }.start()
        }
    }

    /// Reads until end of file into `collected`, on a thread of its own; closes the descriptor.
    static func readToEnd(_ descriptor: Int32, into collected: Collected) async {
        await withCheckedContinuation { continuation in
            Thread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count > 0 { collected.append(Data(buffer[0..<count])) } else if count < 0 && errno == EINTR { continue } else { break }
                }
                closeDescriptor(descriptor)
                continuation.resume()
            }.start()
        }
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()

        func append(_ more: Data) {
            lock.lock()
            data.append(more)
            lock.unlock()
        }

        var text: String {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: data, as: UTF8.self)
        }
    }
}

/// A pseudo-terminal whose slave end is a tool's terminal: the test reads what the tool draws and
/// types keys into it. ``close()`` stops the reader and closes both ends.
final class PseudoTerminal: @unchecked Sendable {
    let master: Int32
    let slave: Int32
    /// The slave end's path.
    let name: String
    private let received = ToolRunner.Collected()
    private let stopped = Flag()
    private let readerDone = DispatchSemaphore(value: 0)

    init() throws {
        #if os(Linux)
        // posix_openpt, grantpt, unlockpt and ptsname are not in Swift's Glibc module: the same
        // through /dev/ptmx and its ioctls (TIOCSPTLCK, TIOCGPTN; `_IOW`/`_IOR` macros Swift
        // cannot import, their values on every Linux architecture Swift supports).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw POSIXError(.ENODEV)
        }
        name = "/dev/pts/\(number)"
        #else
        master = posix_openpt(O_RDWR | O_NOCTTY)
        if master >= 0 { _ = fcntl(master, F_SETFD, FD_CLOEXEC) }
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, let path = ptsname(master) else {
            throw POSIXError(.ENODEV)
        }
        name = String(cString: path)
        #endif
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)
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
    var text: String { received.text }

    /// Types `text`.
    func type(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) }
    }

    /// Waits until the drawn text satisfies `condition` (polling; at most `seconds`).
    func wait(seconds: Double = 20, until condition: (String) -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if condition(text) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(text)
    }

    /// Starts the tool on this terminal (its standard input, output and error). With `asJob`, the
    /// tool leads a session of its own whose controlling terminal this is, its process group in
    /// the foreground — as an interactive shell runs a job: Ctrl-C, Ctrl-Z and typed keys go to
    /// the foreground group, and job control applies.
    func spawn(_ arguments: [String], environment: [String: String] = [:], asJob: Bool = false) throws -> pid_t {
        try ToolRunner.spawn(
            arguments, environment: environment, input: slave, output: slave, error: slave, controllingTerminal: asJob ? name : nil)
    }

    /// Whether the terminal is back in its ordinary (line-at-a-time, echoing) mode.
    var isCanonicalWithEcho: Bool {
        var settings = termios()
        guard tcgetattr(slave, &settings) == 0 else { return false }
        let wanted = tcflag_t(ICANON | ECHO)
        return settings.c_lflag & wanted == wanted
    }
}

/// A pipe whose two descriptors are closed on `exec`, so that a process another test starts
/// meanwhile does not inherit its write end: the reader here would then wait for that process to
/// end before it saw the end of the output (seen under load, as a 300 ms timeout that "took" 15 s).
/// A spawned tool gets its ends through `dup2`, which clears the flag on the copy. Made under
/// ``descriptorLock``, which the tests' spawns take too, so that none starts between the pipe's
/// creation and the flag (`pipe2` is not in Swift's Glibc module).
private func closeOnExecPipe(_ descriptors: inout [Int32]) -> Bool {
    descriptorLock.withLock { _ in
        guard pipe(&descriptors) == 0 else { return false }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return true
    }
}

/// Held while the tests make a pipe and set its flags, and while they start a process.
private let descriptorLock = Mutex(())

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
