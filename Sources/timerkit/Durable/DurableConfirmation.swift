import ArgumentParser
import Foundation

/// The question a command that changes many timers asks before it does: at a terminal, `y` goes
/// ahead and anything else stops (status 1); without one, `--yes` is needed (else status 64).
enum DurableConfirmation {
    /// Refuses, before anything is opened, a change of many timers that nobody can confirm.
    static func requireTerminalOrYes(_ yes: Bool, command: String) throws {
        guard !yes, !Terminal.isInputTerminal else { return }
        throw ValidationError(
            "\(command) with a filter changes every timer it matches: run it at a terminal to confirm, or add --yes")
    }

    /// Lists what is about to change (the first ten keys) and asks; `true` to go ahead.
    static func ask(_ question: String, keys: [String], yes: Bool) -> Bool {
        if yes { return true }
        for key in keys.prefix(10) { Output.error("  \(key)") }
        if keys.count > 10 { Output.error("  … and \(keys.count - 10) more") }
        Output.errorRaw("\(question) [y/N] ")
        guard let answer = readLine() else {
            Output.error("")
            return false
        }
        return ["y", "yes"].contains(answer.trimmingWhitespace.lowercased())
    }
}
