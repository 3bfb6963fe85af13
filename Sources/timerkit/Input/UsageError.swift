/// Bad input on the command line: one line that names the problem. The command prints it with its
/// usage and exits with status 64 (`EX_USAGE`, as ArgumentParser does for its own errors).
struct UsageError: Error, CustomStringConvertible, Equatable {
    let message: String

    init(_ message: String) { self.message = message }

    var description: String { message }
}
