import ArgumentParser
import TimerKitDurable

/// `timerkit durable pause`.
struct DurablePauseCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Hold timers out of every instance's claims until they are resumed.",
        usage: """
            timerkit durable pause [--db <database>] [<options>] <key> ...
            timerkit durable pause [--db <database>] [<options>] --handler <name>
            timerkit durable pause [--db <database>] [<options>] --namespace-wide
            """,
        discussion: """
            Stored: every instance obeys. A run under way finishes; a repeating timer keeps its \
            grid, and its misfire policy decides at resume what becomes of the occurrences that \
            came meanwhile. A paused handler or namespace also holds the timers scheduled for it \
            later. Exits 1 when a key is not stored (the others are still paused).
            """)

    @OptionGroup var store: DurableStoreOptions
    @OptionGroup var targets: DurablePauseTargets

    func perform() async throws {
        let timers = try await store.open()
        if let handler = targets.handler {
            let count = try await timers.pause(handler: handler)
            Output.line("paused handler \(handler): \(count) timer\(count == 1 ? "" : "s") held, and those scheduled for it until resumed")
        } else if targets.namespaceWide {
            let count = try await timers.pauseNamespace()
            Output.line("paused namespace '\(store.namespace)': \(count) timer\(count == 1 ? "" : "s") held, and those scheduled in it until resumed")
        } else {
            var missing = false
            for key in targets.keys {
                if try await timers.pause(key: key) {
                    Output.line("paused \(key)")
                } else {
                    missing = true
                    Output.error("timerkit durable pause: \(DurableFailure.notStored(key, namespace: store.namespace))")
                }
            }
            if missing { throw ExitCode(DurableExit.nothingDone) }
        }
    }
}
