import Foundation
import Synchronization
import TimerKit

/// The articles' screen: keeps a repeating timer in a property and calls its own method from it.
final class Screen: Sendable {
    let ticks = Counted()
    private let storedTimer = Mutex<ScheduledTimer?>(nil)
    private let deinits: Counted

    var timer: ScheduledTimer? { storedTimer.withLock { $0 } }

    init(deinits: Counted) throws {
        self.deinits = deinits
        let timer = try ScheduledTimer.repeating(every: .milliseconds(25), owner: self) { screen, _ in screen.tick() }
        storedTimer.withLock { $0 = timer }
    }

    func tick() { ticks.increment() }

    deinit { deinits.increment() }
}

@MainActor
enum MainActorTicker {
    static func run() async throws -> Int {
        var ticks = 0
        let timer = try ScheduledTimer.repeatingOnMainActor(every: .milliseconds(20)) { _, _ in ticks += 1 }
        try await Task.sleep(for: .milliseconds(150))
        timer.invalidate()
        return ticks
    }
}

/// Prints the demo's sections and checks, and counts the outcomes.
final class DemoReport: Sendable {
    private let counts = Mutex((passed: 0, failed: 0))
    let verbose: Bool

    init(verbose: Bool) { self.verbose = verbose }

    var passed: Int { counts.withLock { $0.passed } }
    var failed: Int { counts.withLock { $0.failed } }

    func section(_ title: String) { print("\n\(title)") }

    func detail(_ line: String) { if verbose { print("    \(line)") } }

    func check(_ condition: Bool, _ line: String) {
        counts.withLock { condition ? ($0.passed += 1) : ($0.failed += 1) }
        print("  \(condition ? "✓" : "✗") \(line)")
    }
}

final class Collected<Value: Sendable>: Sendable {
    private let storage = Mutex<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var values: [Value] { storage.withLock { $0 } }
}

final class Counted: Sendable {
    private let storage = Atomic<Int>(0)
    func increment() { storage.add(1, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}

func ms(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let milliseconds = Double(seconds) * 1e3 + Double(attoseconds) / 1e15
    return String(format: "%.2f ms", milliseconds)
}
