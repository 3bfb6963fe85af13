import Foundation
import Testing

@testable import timerkit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit stopwatch`: its arithmetic exactly, then the built binary in a pipe and on a terminal.
@Suite("timerkit stopwatch", .timeLimit(.minutes(2)))
struct StopwatchTests {
    @Test("elapsed time is a sum of clock readings: pauses freeze it to the nanosecond, laps split it, and the parts add up")
    func arithmetic() {
        var watch = StopwatchRun.Watch(startedAt: 1_000)
        #expect(watch.elapsed(at: 5_000) == 4_000)
        watch.toggle(at: 6_000)  // pause after 5,000 ns
        #expect(watch.isPaused && watch.elapsed(at: 999_999) == 5_000)
        watch.toggle(at: 10_000)  // resume
        #expect(watch.elapsed(at: 12_000) == 7_000)
        let first = watch.lap(at: 12_000)
        let second = watch.lap(at: 15_500)
        #expect([first.number, second.number] as [Int] == [1, 2] as [Int])
        #expect([first.lap, first.total, second.lap, second.total] as [Int64] == [7_000, 7_000, 3_500, 10_500] as [Int64])
        #expect(first.lap + second.lap == second.total)
    }

    @Test(
        "the time reads m:ss with tenths or hundredths, truncated (never ahead of the clock), and h:mm:ss from an hour",
        arguments: [
            (0, true, "0:00.0"), (99_999_999, true, "0:00.0"), (100_000_000, true, "0:00.1"), (7_319_999_999, false, "0:07.31"),
            (727_300_000_000, true, "12:07.3"), (3_727_300_000_000, true, "1:02:07.3"), (-5, false, "0:00.00")
        ] as [(Int64, Bool, String)])
    func format(nanoseconds: Int64, tenths: Bool, text: String) {
        #expect(StopwatchRun.format(nanoseconds, tenths: tenths) == text)
    }

    @Test("into a pipe: one plain line per whole second (0:01, 0:02, …), then Ctrl-C prints the total to the hundredth and exits 130")
    func piped() async throws {
        let outcome = try await ToolRunner.run(["stopwatch", "--label", "build"], interrupt: .afterOutput("0:02  build"))
        #expect(outcome.status == 130)
        let lines = outcome.output.split(separator: "\n").map(String.init)
        #expect(lines.starts(with: ["0:01  build", "0:02  build"]), "\(lines)")
        let total = try #require(lines.last)
        // The total is at least the last whole second shown, and no more than the run took.
        let reading = try #require(total.split(separator: " ").dropFirst().first.flatMap { Self.seconds(String($0)) }, "\(total)")
        #expect(total.hasPrefix("total ") && total.hasSuffix("  build") && reading >= 2 && reading <= outcome.seconds + 0.01, "\(total)")
        #expect(!outcome.output.contains("\u{1B}"))
    }

    @Test("on a terminal: l takes a lap above the line, p pauses and resumes, q stops with the total and the lap count, terminal restored, exit 0")
    func onATerminal() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["stopwatch"], environment: ["NO_COLOR": "1"])
        #expect(await terminal.wait { $0.contains("p pause · l lap · q stop") })
        #expect(await terminal.wait { _ in !terminal.isCanonicalWithEcho })
        terminal.type("l")
        #expect(await terminal.wait { $0.contains("lap 1  ") })
        terminal.type("p")
        #expect(await terminal.wait { $0.contains("paused · p resume") })
        terminal.type("p")
        terminal.type("l")
        #expect(await terminal.wait { $0.contains("lap 2  ") })
        terminal.type("q")
        #expect(await ToolRunner.waitForExit(pid) == 0)
        #expect(await terminal.wait { $0.contains(", 2 laps") }, "\(terminal.text.debugDescription)")
        #expect(terminal.isCanonicalWithEcho)
        #expect(await terminal.wait { $0.contains("\u{1B}[?25h") })
    }

    /// `m:ss.hh` (or `h:mm:ss.hh`) in seconds.
    static func seconds(_ text: String) -> Double? {
        let parts = text.split(separator: ":").map { Double($0) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil }) else { return nil }
        return parts.reduce(0.0) { $0 * 60 + $1! }
    }
}
