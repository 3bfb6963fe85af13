import ArgumentParser
import Foundation
import TimerKitDurable

/// `timerkit durable show KEY`.
struct DurableShowCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show every field of one stored timer.",
        usage: "timerkit durable show [--db <database>] [<options>] <key> [--json]",
        discussion: """
            Exits 1 when no timer is stored under the key. --json prints one JSON object, with \
            the fields `ls --json` gives each timer.
            """)

    @OptionGroup var store: DurableStoreOptions

    @Argument(help: ArgumentHelp("The timer's key.", valueName: "key"))
    var key: String

    @Flag(help: "One JSON object, for scripts.")
    var json = false

    func perform() async throws {
        let timers = try await store.open()
        guard let timer = try await timers.timer(key: key) else { throw DurableFailure.notStored(key, namespace: store.namespace) }
        let now = Date()
        if json {
            Output.line(DurableFormat.jsonLine(DurableFormat.json(timer, now: now)))
            return
        }
        let fields = DurableFormat.lines(timer, now: now)
        let width = fields.map(\.0.count).max() ?? 0
        for (name, value) in fields {
            Output.line(name + ":" + String(repeating: " ", count: width - name.count + 1) + value)
        }
    }
}

extension DurableFailure {
    /// No timer under `key`: status 1.
    static func notStored(_ key: String, namespace: String) -> DurableFailure {
        DurableFailure("no durable timer is stored under '\(key)' in namespace '\(namespace)'", status: DurableExit.nothingDone)
    }
}
