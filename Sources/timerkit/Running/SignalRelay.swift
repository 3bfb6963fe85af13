import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns SIGINT, SIGTERM and SIGHUP (and SIGTSTP, when asked) into calls of a Swift closure on a
/// thread of its own.
///
/// The signal handler does the one thing a handler may: it writes the signal's number into a pipe
/// (the self-pipe trick). A thread blocked on the other end reads it and calls `handler`, where
/// anything is allowed. Installed once per process, before the work it guards starts.
enum SignalRelay {
    /// The pipe's write end, read by the handler (set once, before the handler is installed).
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    static let relayed: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Installs the relay. With `catchingSuspension`, SIGTSTP (Ctrl-Z) is relayed too instead of
    /// stopping the process at once: the handler restores what it changed (the terminal), then
    /// stops the process itself (``stopSelf()``).
    static func install(catchingSuspension: Bool = false, _ handler: @escaping @Sendable (Int32) -> Void) {
        let relayed = relayed + (catchingSuspension ? [SIGTSTP] : [])
        // A process may start with these signals blocked (a parent's worker thread spawned it, and
        // blocked masks are inherited): unblock them on this thread, so that it and the threads it
        // creates from here on (the relay, the clock's engine) can receive them.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        for signal in relayed { sigaddset(&unblocked, signal) }
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        writeEnd = ends[1]
        let readEnd = ends[0]
        let reader = Thread { relay(from: readEnd, to: handler) }
        reader.name = "timerkit.signals"
        reader.start()
        for signal in relayed {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalRelay.writeEnd, &byte, 1)
            }
            #else
            action.__sigaction_u.__sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalRelay.writeEnd, &byte, 1)
            }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
    }

    /// Stops the process as SIGTSTP would have (the shell sees a stopped job) and returns once it
    /// is continued (`fg`, `bg`, SIGCONT).
    ///
    /// `raise`, not `kill(getpid(), …)`: a signal sent to the process may be taken by another
    /// thread while this one runs on — past this call, into what must wait for the resume (found
    /// by the Ctrl-Z test, which saw key mode entered again before the stop). Sent to this thread,
    /// it is taken on the way out of the call, and the whole process stops there.
    static func stopSelf() {
        _ = raise(SIGSTOP)
    }

    private static func relay(from readEnd: Int32, to handler: @Sendable (Int32) -> Void) {
        var byte: UInt8 = 0
        while true {
            let count = read(readEnd, &byte, 1)
            if count == 1 { handler(Int32(byte)) } else if count < 0 && errno == EINTR { continue } else { return }
        }
    }
}
