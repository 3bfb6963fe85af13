import ArgumentParser
import TimerKitDurable

/// `timerkit durable resume`.
struct DurableResumeCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Let paused timers run again.",
        usage: """
            timerkit durable resume [--db <database>] [<options>] <key> ...
            timerkit durable resume [--db <database>] [<options>] --handler <name>
            timerkit durable resume [--db <database>] [<options>] --namespace-wide
            """,
        discussion: """
            A timer that was parked when paused is parked again. A key held by its handler's or \
            the namespace's pause resumes with them, not alone; --handler resumes the handler's \
            timers paused one by one too, unless the namespace is paused; --namespace-wide lifts \
            the namespace's pause (handlers paused on their own stay paused). Exits 1 when a key \
            is not stored, not paused, or held by its handler's or the namespace's pause (the \
            others are still resumed).
            """)

    @OptionGroup var store: DurableStoreOptions
    @OptionGroup var targets: DurablePauseTargets

    func perform() async throws {
        let timers = try await store.open()
        if let handler = targets.handler {
            let count = try await timers.resume(handler: handler)
            Output.line("resumed handler \(handler): \(count) timer\(count == 1 ? "" : "s")")
        } else if targets.namespaceWide {
            let count = try await timers.resumeNamespace()
            Output.line("resumed namespace '\(store.namespace)': \(count) timer\(count == 1 ? "" : "s")")
        } else {
            var missing = false
            for key in targets.keys {
                if try await timers.resume(key: key) {
                    Output.line("resumed \(key)")
                } else {
                    missing = true
                    Output.error(
                        "timerkit durable resume: '\(key)' was not resumed: no timer is stored under it in namespace '\(store.namespace)', it is not paused, "
                            + "or its handler's or the namespace's pause holds it")
                }
            }
            if missing { throw ExitCode(DurableExit.nothingDone) }
        }
    }
}
