import Foundation
import Testing

/// The command-line tool, tested by running the built binary (C1–C17 end to end, in real time).
@Suite("timerkit command", .timeLimit(.minutes(2)))
struct DemoCommandTests {
    func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let outcome = try await ToolRunner.run(arguments)
        return (outcome.status, outcome.output + outcome.error)
    }

    @Test("timerkit demo walks through every feature and every check passes")
    func demoPasses() async throws {
        let (status, output) = try await run(["demo"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("23 checks passed, 0 failed"))
        #expect(!output.contains("  ✗ "))
        for section in 1...15 {
            #expect(output.contains("\n\(section). "), "section \(section) is missing")
        }
        // The virtual-clock section is exact: its lines are the same on every machine.
        #expect(output.contains("✓ coalesce: deadline virtual+1s standing for 5; next deadline virtual+6s"))
        #expect(output.contains("✓ a 3 s countdown: 3 at virtual+0s, 2 at virtual+1s, 1 at virtual+2s, 0 at virtual+3s; the final tick once"))
        #expect(output.contains("✓ skip: deadline virtual+5s standing for 1 after 4 skipped; next deadline virtual+6s"))
        #expect(
            output.contains(
                "✓ burst(maxFires: 3): deadline virtual+1s standing for 1; deadline virtual+2s standing for 1; deadline virtual+3s standing for 3; next deadline virtual+6s"
            ))
    }

    @Test("bad options are refused with a usage message")
    func usage() async throws {
        let (status, output) = try await run(["--no-such-option"])
        #expect(status == 64)
        #expect(output.contains("Usage"))
        let help = try await run(["--help"])
        #expect(help.status == 0 && help.output.contains("demo"))
    }
}
