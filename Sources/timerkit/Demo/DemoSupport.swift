import Foundation
import Synchronization
import TimerKit

/// The articles' screen: keeps a repeating timer in a property and calls its own method from it.
final class Screen: @unchecked Sendable {
    let ticks = Counted()
    private let lock = NSLock()
    private var storedTimer: ScheduledTimer?  // guarded by lock
    private let deinits: Counted

    var timer: ScheduledTimer? { lock.withLock { storedTimer } }

    init(deinits: Counted) throws {
        self.deinits = deinits
        let timer = try ScheduledTimer.repeating(every: .milliseconds(25), .bound(to: self) { screen, _, _ in screen.tick() })
        lock.withLock { storedTimer = timer }
    }

    func tick() { ticks.increment() }

    deinit { deinits.increment() }
}

/// A view that animates with a frame clock it does not keep alive.
final class FrameView: Sendable {
    let frames = Counted()
}

@MainActor
enum MainActorTicker {
    static func run() async throws -> Int {
        var ticks = 0
        let timer = try ScheduledTimer.repeating(every: .milliseconds(20), .onMainActor { _, _ in ticks += 1 })
        try await Task.sleep(for: .milliseconds(150))
        timer.invalidate()
        return ticks
    }
}

/// Prints the demo's sections and checks, and counts the outcomes.
final class DemoReport: @unchecked Sendable {
    private let lock = NSLock()
    private var counts = (passed: 0, failed: 0)  // guarded by lock
    let verbose: Bool

    init(verbose: Bool) { self.verbose = verbose }

    var passed: Int { lock.withLock { counts.passed } }
    var failed: Int { lock.withLock { counts.failed } }

    func section(_ title: String) { print("\n\(title)") }

    func note(_ line: String) { print("  \(line)") }

    func detail(_ line: String) { if verbose { print("    \(line)") } }

    func check(_ condition: Bool, _ line: String) {
        lock.withLock {
            if condition {
                counts.passed += 1
            } else {
                counts.failed += 1
            }
        }
        print("  \(condition ? "✓" : "✗") \(line)")
    }
}

final class Collected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Value] = []  // guarded by lock
    func append(_ value: Value) { lock.withLock { storage.append(value) } }
    var values: [Value] { lock.withLock { storage } }
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
