import Foundation
import Testing
import TimerKitTesting

@testable import TimerKitDurable

/// The runner's state machine against a model of processes, a store and faults (`ModelWorld`):
/// seeded random event sequences — claims, handler outcomes (return, throw, hang, ignore
/// cancellation), crashes, freezes, store calls that fail (applied or not), clock steps, shutdowns,
/// cancels, manual fires, lost notifications — each checked after every event, then healed and
/// checked for liveness.
@Suite("The runner's state machine: a seeded model")
struct RunnerModelTests {
    /// 100,000 sequences in the suite; CI's sanitizer runs take fewer (`TIMERKIT_MODEL_SEQUENCES`).
    static let sequences = ProcessInfo.processInfo.environment["TIMERKIT_MODEL_SEQUENCES"].flatMap(Int.init) ?? 100_000

    /// The sequences run in batches, in parallel.
    static let batches = 8

    @Test(
        "Over 100,000 seeded sequences of random events (in 8 batches): no two runs of one key at once in a live process; no occurrence whose handler returned runs again unless a process crashed, froze, exited or lost its store meanwhile; no start past maxAttempts; slots add up; after healing, every timer ran, was parked or was cancelled, and nothing is stuck",
        arguments: 0..<batches)
    func model(batch: Int) async {
        // On a thread of its own: a minute of computation on the cooperative pool would starve the
        // suite's other tests, which run beside it.
        let issues = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: Self.run(batch: batch)) }.start()
        }
        for issue in issues { Issue.record(Comment(rawValue: issue)) }
    }

    /// Runs a batch's sequences; returns the violations found, with the trace of the first.
    static func run(batch: Int) -> [String] {
        var starts = 0
        var events = 0
        let began = ContinuousClock.now
        let seeds = stride(from: batch, to: sequences, by: batches)
        for seed in seeds {
            var world = ModelWorld(seed: UInt64(seed))
            world.run(events: 30)
            starts += world.starts
            events += world.events
            guard world.violations.isEmpty else {
                var traced = ModelWorld(seed: UInt64(seed), tracing: true)
                traced.run(events: 30)
                // The whole trace, where asked (`TIMERKIT_MODEL_TRACE=path`: path.SEED), for debugging.
                if let path = ProcessInfo.processInfo.environment["TIMERKIT_MODEL_TRACE"] {
                    try? traced.trace.joined(separator: "\n").write(toFile: "\(path).\(seed)", atomically: true, encoding: .utf8)
                }
                return ["seed \(seed): \(world.violations.prefix(3).joined(separator: "; "))\n\(traced.trace.suffix(80).joined(separator: "\n"))"]
            }
        }
        print(
            "runner model, batch \(batch): \(seeds.underestimatedCount) sequences, \(events) random events, \(starts) handler starts, in \(ContinuousClock.now - began)"
        )
        return starts > seeds.underestimatedCount ? [] : ["the sequences ran \(starts) handlers"]
    }
}
