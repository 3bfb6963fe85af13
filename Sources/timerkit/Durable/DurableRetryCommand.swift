import ArgumentParser
import TimerKitDurable

/// `timerkit durable retry KEY…`, or with a filter.
struct DurableRetryCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Schedule parked timers again at their occurrence, their attempts cleared.",
        usage: """
            timerkit durable retry [<options>] <key> ...
            timerkit durable retry [<options>] <filter> ... [--yes]
            """,
        discussion: """
            A parked timer failed as often as its runner allows; retry makes it due again (now, if \
            its occurrence has passed). With a filter instead of keys, every timer it matches is \
            retried: at a terminal the tool lists them and asks (y/N); elsewhere it needs --yes, \
            and refuses (status 64) without. Exits 1 when a key is not stored or is running (the \
            others are still retried), when the filter matches nothing, or when the question is \
            declined.

            Example: timerkit durable retry --status parked --handler sale.end --yes
            """)

    @OptionGroup var store: DurableStoreOptions
    @OptionGroup var targets: DurableTargets

    func validate() throws { try targets.validate(command: "retry") }

    func perform() async throws {
        let location = try store.location()
        let timers = try await store.open()
        let keys = try await targets.resolve(in: timers, verb: "retry", location: "\(location)")
        var (done, missing) = (0, 0)
        for key in keys {
            if try await Self.retry(key, in: timers) {
                done += 1
                Output.line("retried \(key)")
            } else {
                missing += 1
                Output.error("timerkit durable retry: no durable timer is stored under '\(key)' in namespace '\(store.namespace)', or it is running")
            }
        }
        if !targets.filter.isEmpty { Output.error("retried \(done) of \(keys.count)\(missing > 0 ? " (\(missing) gone or running meanwhile)" : "")") }
        if done == 0 || (targets.filter.isEmpty && missing > 0) { throw ExitCode(DurableExit.nothingDone) }
    }

    /// Whether the timer was retried: `false` when none is stored under the key, or it is running.
    private static func retry(_ key: String, in timers: DurableTimers) async throws(DurableTimerError) -> Bool {
        do {
            try await timers.retry(key: key)
            return true
        } catch {
            guard case .notFound = error else { throw error }
            return false
        }
    }
}
