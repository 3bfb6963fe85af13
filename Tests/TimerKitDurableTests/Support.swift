import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// A fresh SQLite file in a temporary folder of its own, removed with the folder.
final class TemporaryDatabase: Sendable {
    let folder: URL
    var path: String { folder.appendingPathComponent("timers.sqlite").path }

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-durable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

/// 2026-11-25 00:00:00 UTC, in nanoseconds since 1970: where the tests' virtual clocks start, so
/// that their readings are calendar instants.
let epoch: Int64 = 1_795_564_800 * 1_000_000_000

func makeVirtualClock() -> VirtualClock { VirtualClock(start: .nanoseconds(epoch)) }

/// Options for exact tests: no catch-up spread, short retries.
func exactOptions(_ change: (inout DurableTimers.Options) -> Void = { _ in }) -> DurableTimers.Options {
    var options = DurableTimers.Options()
    options.catchUpRate = .max
    options.retryDelay = .seconds(1)
    options.maxRetryDelay = .seconds(8)
    options.horizon = .seconds(60)
    options.lease = .seconds(30)
    options.onError = { _ in }
    change(&options)
    return options
}

/// The instant `seconds` after the tests' epoch.
func at(_ seconds: Double) -> Date { Date(nanosecondsSince1970: epoch + Int64(seconds * 1e9)) }

/// Seconds since the tests' epoch.
func seconds(_ date: Date) -> Double { Double(date.nanosecondsSince1970 - epoch) / 1e9 }

/// What handlers saw, in order.
final class FireLog: @unchecked Sendable {
    private let lock = NSLock()
    private var fires: [(payload: String, fire: DurableFire)] = []

    func append(_ payload: String, _ fire: DurableFire) { lock.withLock { fires.append((payload, fire)) } }
    var all: [(payload: String, fire: DurableFire)] { lock.withLock { fires } }
    var count: Int { lock.withLock { fires.count } }
}

struct Note: Codable, Sendable, Equatable {
    var text: String
}

/// An executable of this package, built beside the test bundle (the probes the crash and fleet
/// tests start).
func builtExecutable(_ name: String) -> URL {
    #if canImport(Darwin)
    let products = Bundle(for: BundleMarker.self).bundleURL.deletingLastPathComponent()
    #else
    let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    #endif
    return products.appendingPathComponent(name)
}

/// A class of this test module, for ``builtExecutable(_:)``.
private final class BundleMarker {}

/// What a runner reported (its events and errors, each with the virtual clock's reading), for a
/// failed expectation's comment: a test that fails only on a loaded machine says what the runner
/// saw instead of leaving a guess.
final class RunnerTrace: @unchecked Sendable, CustomStringConvertible {
    private let lock = NSLock()
    private var lines: [String] = []
    private let clock: VirtualClock

    init(_ clock: VirtualClock) { self.clock = clock }

    /// `options`, reporting to this trace as well as to its own handlers.
    func recording(_ options: DurableTimers.Options) -> DurableTimers.Options {
        var options = options
        let (onEvent, onError) = (options.onEvent, options.onError)
        options.onEvent = { [self] event in
            append("\(event)")
            onEvent(event)
        }
        options.onError = { [self] error in
            append("error: \(error)")
            onError(error)
        }
        return options
    }

    func append(_ line: String) {
        let at = Double(clock.now.nanoseconds - epoch) / 1e9
        lock.withLock { lines.append("[\(at)] \(line)") }
    }

    var description: String { lock.withLock { "the runner's trace:\n" + lines.joined(separator: "\n") } }
}

extension DurableTimers {
    /// The phase of each occurrence this runner holds in memory, by key, for a failure's comment.
    var occurrencePhases: String {
        runner.read { machine in
            machine.occurrences.map { "\($0.key.string): \($0.value.phase)" }.sorted().joined(separator: ", ")
        }
    }

    /// Where this runner has the key armed in memory (`nil`: not in memory, or further on than armed).
    func armedAt(_ key: String) -> Date? {
        runner.read { machine in
            guard case .armed(let readyAt, _)? = machine.occurrences[StoredKey(key)]?.phase else { return nil }
            return Date(nanosecondsSince1970: readyAt)
        }
    }
}

/// Moves `virtual` by `delay` and checks that `key`'s one-shot then ran once, at `deadline`, and is
/// gone: the only fire `log` has.
func expectFiresOnce(
    _ key: String, payload: String, at deadline: Date, after delay: Duration, timers: DurableTimers, virtual: VirtualClock, log: FireLog,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    await virtual.advance(by: delay)
    #expect(await eventually { log.count == 1 }, sourceLocation: sourceLocation)
    #expect(try await eventually { try await timers.timer(key: key) == nil }, sourceLocation: sourceLocation)
    #expect(log.all.map(\.payload) == [payload], sourceLocation: sourceLocation)
    #expect(log.all.first?.fire.firedAt == deadline, "at its deadline, not before", sourceLocation: sourceLocation)
}

extension VirtualClock {
    /// Moves the clock to `seconds` after the tests' epoch, again and again (at most a minute) until
    /// `condition` holds: what the runner arms after the clock got there — a next occurrence or a
    /// retry armed once its run's end is written, off the clock's executor — runs at the next
    /// nudge, at the same instant, never later. A wait after a plain move would hang on a loaded
    /// machine, where the runner can arm it after the move.
    func reach(_ seconds: Double, until condition: () async throws -> Bool) async rethrows -> Bool {
        let target = TimerInstant(kind: .virtual, nanoseconds: epoch + Int64(seconds * 1e9))
        return try await eventually {
            await advance(to: target)
            return try await condition()
        }
    }
}
