import ArgumentParser
import TimerKit

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Walk through TimerKit's features in real time.")
    func run() async throws {}
}
