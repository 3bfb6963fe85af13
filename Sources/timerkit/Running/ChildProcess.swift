import ArgumentParser
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A command run as a child process, with the shell's exit-status conventions and its job control.
///
/// The command runs in a process group of its own (its id is the child's pid), so that a signal
/// `timerkit` sends it — passed on, at a time limit, or KILL after the grace period — reaches
/// everything it started, as GNU `timeout` does: no grandchild survives. When `timerkit` is the
/// terminal's foreground job, the command's group is given the terminal while it runs, as a shell
/// does: it reads the terminal, and Ctrl-C, Ctrl-\ and Ctrl-Z reach it directly (see ``wait()``
/// for what a stop does). SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE are at their default
/// actions in the child and no signal is blocked, whatever `timerkit` itself does with them.
struct ChildProcess: Sendable {
    let pid: pid_t
    /// Whether the command's group was given the terminal when it started.
    let hasTerminal: Bool
    /// Whether the command leads a process group of its own (`timeout --foreground`: it stays in
    /// `timerkit`'s, and only the command itself is signalled).
    let ownGroup: Bool

    /// Why a command could not be started, with the status a shell gives for it.
    struct LaunchError: Error, CustomStringConvertible {
        let command: String
        let code: Int32

        /// 127 when the command was not found, 126 when it was found but cannot be run.
        var exitStatus: Int32 { code == ENOENT || code == ENOTDIR ? 127 : 126 }

        var description: String {
            exitStatus == 127
                ? "command not found: \(command)"
                : "cannot run \(command): \(String(cString: strerror(code)))"
        }
    }

    /// How a child ended.
    enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signaled(Int32)

        /// The status a shell reports: the exit code, or 128 + the signal's number.
        var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
        }

        var succeeded: Bool { self == .exited(0) }
    }

    /// Starts `arguments[0]` (looked up in `PATH` unless it contains a slash) with the rest as its
    /// arguments. With `outputToStandardError`, the child's standard output goes to this process's
    /// standard error (`every --json` keeps stdout for its own lines). With `ownGroup` false the
    /// child stays in this process's group and the terminal is left alone (GNU `timeout
    /// --foreground`): job control is then the shell's, for both.
    static func launch(_ arguments: [String], outputToStandardError: Bool = false, ownGroup: Bool = true) throws(LaunchError) -> ChildProcess {
        precondition(!arguments.isEmpty, "ChildProcess.launch: no command")
        #if os(tvOS) || os(watchOS) || os(visionOS) || os(iOS)
        // No process spawning there: the tool is for macOS and Linux (Package.swift, README).
        throw LaunchError(command: arguments[0], code: ENOTSUP)
        #else
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
        if outputToStandardError { posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO) }

        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        // A process group of its own, led by the child (group 0: the child's pid).
        posix_spawnattr_setpgroup(&attributes, 0)
        let flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | (ownGroup ? POSIX_SPAWN_SETPGROUP : 0)
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard result == 0 else { throw LaunchError(command: arguments[0], code: result) }
        // A command that reads the terminal before this line stops (SIGTTIN); `wait()` continues it.
        let hasTerminal = ownGroup && JobControl.isForeground && JobControl.giveTerminal(to: pid)
        return ChildProcess(pid: pid, hasTerminal: hasTerminal, ownGroup: ownGroup)
        #endif
    }

    /// Checks, before any waiting, that `command` can be started as ``launch(_:outputToStandardError:)``
    /// will start it: found in `PATH` (unless it contains a slash) as an executable file. So
    /// `timerkit at 09:30 -- sya hi` fails at once rather than hours later. (The file can still
    /// change before the run; the launch then reports it.)
    ///
    /// - Throws: ``LaunchError`` with `ENOENT` (exit 127) when nothing of that name is found,
    ///   `EACCES` (126) when it is found but is not an executable file.
    static func check(_ command: String) throws(LaunchError) {
        func executable(_ path: String) -> Int32 {
            var info = stat()
            guard stat(path, &info) == 0 else { return ENOENT }
            guard (info.st_mode & mode_t(S_IFMT)) == mode_t(S_IFREG), access(path, X_OK) == 0 else { return EACCES }
            return 0
        }
        if command.contains("/") {
            let result = executable(command)
            if result != 0 { throw LaunchError(command: command, code: result) }
            return
        }
        // As execvp searches: each PATH entry in order (an empty one is the current directory);
        // a match that cannot be run is remembered, and reported if nothing later can be.
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        var found = ENOENT
        for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + command
            switch executable(candidate) {
            case 0: return
            case EACCES: found = EACCES
            default: continue
            }
        }
        throw LaunchError(command: command, code: found)
    }

    /// ``check(_:)`` for a subcommand: on failure, says so on stderr as the run would and exits
    /// with the shell's status (127 or 126).
    static func checkBeforeWaiting(_ command: [String], tool: String) throws(ExitCode) {
        guard let name = command.first else { return }
        do {
            try check(name)
        } catch {
            Output.error("timerkit \(tool): \(error)")
            throw ExitCode(error.exitStatus)
        }
    }

    /// Waits for the child to end (blocking the calling thread), following its stops as a shell's
    /// job would, and takes the terminal back if the command had it.
    ///
    /// - Ctrl-Z while the command has the terminal stops its group: `timerkit` takes the terminal
    ///   back and stops too, so the shell sees a stopped job; on `fg` it gives the terminal to the
    ///   command again and continues it (on `bg`, it continues it in the background).
    /// - A command that reads the terminal while it does not have it (SIGTTIN, SIGTTOU) stops
    ///   `timerkit` as well; on `fg` the command gets the terminal and continues.
    /// - A stop sent to the command alone, without a terminal, is its sender's business: waiting
    ///   goes on.
    func wait() -> Termination {
        var holding = hasTerminal
        var status: Int32 = 0
        while true {
            guard waitpid(pid, &status, WUNTRACED) >= 0 else {
                if errno == EINTR { continue }
                status = 127 << 8
                break
            }
            // WIFSTOPPED / WSTOPSIG, which Swift does not import.
            guard status & 0xff == 0x7f else { break }
            // In this process's group, a stop is the whole job's: the shell continues both.
            guard ownGroup else { continue }
            let stop = (status >> 8) & 0xff
            let wantsTerminal = stop == SIGTTIN || stop == SIGTTOU
            if wantsTerminal && holding && JobControl.foregroundGroup == pid {
                // It read the terminal in the moment between its start and being given it.
                _ = kill(-pid, SIGCONT)
                continue
            }
            guard wantsTerminal || holding else { continue }
            if holding && JobControl.foregroundGroup == pid { _ = JobControl.giveTerminal(to: getpgrp()) }
            holding = false
            SignalRelay.stopSelf()
            // Continued: in the foreground (fg) the command gets the terminal again.
            if JobControl.isForeground { holding = JobControl.giveTerminal(to: pid) }
            _ = kill(-pid, SIGCONT)
        }
        if holding && JobControl.foregroundGroup == pid { _ = JobControl.giveTerminal(to: getpgrp()) }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }

    /// Whether the command ended on Ctrl-C or Ctrl-\ typed while it had the terminal: the user
    /// meant to interrupt `timerkit` too (a shell reads it so: the signal reached only the
    /// command's group).
    func wasInterruptedAtTerminal(_ termination: Termination) -> Bool {
        hasTerminal && (termination == .signaled(SIGINT) || termination == .signaled(SIGQUIT))
    }

    /// Sends `signal` to the command's process group — the command and whatever it started —
    /// or, if the command has left that group (or never had one), to the command alone. Ignored if
    /// it has ended.
    func send(_ signal: Int32) {
        if !ownGroup || kill(-pid, signal) != 0 { _ = kill(pid, signal) }
    }

    /// How long a child has after a forwarded signal before it is killed.
    static let gracePeriod: Duration = .seconds(2)

    /// Passes a signal on to the child: the first time, the signal itself, then SIGKILL after
    /// ``gracePeriod`` if `isRunning` still says so; a repeated signal kills it at once.
    func forward(_ signal: Int32, repeated: Bool, isRunning: @escaping @Sendable () -> Bool) {
        guard !repeated else { return send(SIGKILL) }
        send(signal)
        _ = try? TimerClock.continuous.schedule(at: .after(Self.gracePeriod)) {
            if isRunning() { send(SIGKILL) }
        }
    }
}
