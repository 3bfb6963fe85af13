import ArgumentParser

/// What `pause` and `resume` act on: timers by key, every timer of a handler, or the namespace.
struct DurablePauseTargets: ParsableArguments {
    @Argument(help: ArgumentHelp("The timers' keys.", valueName: "key"))
    var keys: [String] = []

    @Option(help: ArgumentHelp("Every timer of this handler, and those scheduled for it meanwhile.", valueName: "name"))
    var handler: String?

    @Flag(help: "Every timer of the namespace, and those scheduled in it meanwhile.")
    var namespaceWide = false

    /// Exactly one of keys, `--handler` and `--namespace-wide`.
    func validate() throws {
        let given = [!keys.isEmpty, handler != nil, namespaceWide].filter { $0 }.count
        if given == 0 { throw ValidationError("give keys, --handler NAME or --namespace-wide") }
        if given > 1 { throw ValidationError("give one of keys, --handler NAME and --namespace-wide") }
    }
}
