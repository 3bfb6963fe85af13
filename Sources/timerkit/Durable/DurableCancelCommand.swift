import ArgumentParser
import TimerKitDurable

/// `timerkit durable cancel KEY…`, or with a filter.
struct DurableCancelCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Remove timers: they will not run (a running handler's task is cancelled).",
        usage: """
            timerkit durable cancel [<options>] <key> ...
            timerkit durable cancel [<options>] <filter> ... [--yes]
            """,
        discussion: """
            With a filter instead of keys, every timer it matches is removed: at a terminal the \
            tool lists them and asks (y/N); elsewhere it needs --yes, and refuses (status 64) \
            without. Exits 1 when a key is not stored (the others are still removed), when the \
            filter matches nothing, or when the question is declined.

            Examples:
              timerkit durable cancel --db timers.sqlite sale/42 sale/43
              timerkit durable cancel --status parked --handler sale.end --yes
            """)

    @OptionGroup var store: DurableStoreOptions
    @OptionGroup var targets: DurableTargets

    func validate() throws { try targets.validate(command: "cancel") }

    func perform() async throws {
        let location = try store.location()
        let timers = try await store.open()
        let keys = try await targets.resolve(in: timers, verb: "cancel", location: "\(location)")
        var (done, missing) = (0, 0)
        for key in keys {
            switch try await timers.cancel(key: key) {
            case .cancelled:
                done += 1
                Output.line("cancelled \(key)")
            case .cancelledWhileRunning:
                done += 1
                Output.line("cancelled \(key) (its handler was running: its task is cancelled)")
            case .notFound:
                missing += 1
                Output.error("timerkit durable cancel: \(DurableFailure.notStored(key, namespace: store.namespace))")
            }
        }
        if !targets.filter.isEmpty { Output.error("cancelled \(done) of \(keys.count)\(missing > 0 ? " (\(missing) gone meanwhile)" : "")") }
        if done == 0 || (targets.filter.isEmpty && missing > 0) { throw ExitCode(DurableExit.nothingDone) }
    }
}
