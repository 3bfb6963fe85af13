import ArgumentParser
import TimerKitDurable

/// The timers a command that changes timers acts on: the keys given, or every timer a filter
/// matches (asked for at a terminal, or `--yes`).
struct DurableTargets: ParsableArguments {
    @Argument(help: ArgumentHelp("The timers' keys (or give a filter instead).", valueName: "key"))
    var keys: [String] = []

    @OptionGroup(title: "Filter (instead of keys)") var filter: DurableFilterOptions

    @Flag(name: [.customShort("y"), .long], help: "Change every timer the filter matches without asking.")
    var yes = false

    /// Checks that there are keys or a filter, not both; a filter needs a terminal or `--yes`.
    func validate(command: String) throws {
        if keys.isEmpty && filter.isEmpty { throw ValidationError("give the keys of the timers, or a filter such as --status parked --handler NAME") }
        if !keys.isEmpty && !filter.isEmpty { throw ValidationError("give keys or a filter, not both") }
        do {
            _ = try filter.statuses()
        } catch {
            throw ValidationError(error.message)
        }
        if !filter.isEmpty { try DurableConfirmation.requireTerminalOrYes(yes, command: command) }
    }

    /// The keys to act on: those given, or those the filter matches once the question is answered
    /// yes. Throws status 1 when the filter matches nothing or the question is declined.
    func resolve(in timers: DurableTimers, verb: String, location: String) async throws -> [String] {
        guard !filter.isEmpty else { return keys }
        let matched = try await filter.keys(in: timers)
        guard !matched.isEmpty else {
            throw DurableFailure("no timer matches (\(filter.summary)) in namespace '\(timers.namespace)': nothing to \(verb)", status: DurableExit.nothingDone)
        }
        let count = matched.count == 1 ? "1 timer" : "\(matched.count) timers"
        let question = "\(verb.capitalized) \(count) (\(filter.summary)) in namespace '\(timers.namespace)' of \(location)?"
        guard DurableConfirmation.ask(question, keys: matched, yes: yes) else {
            throw DurableFailure("nothing done", status: DurableExit.nothingDone)
        }
        return matched
    }
}
