import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// The query API (`timers(matching:)`) on both stores: every status reached for real, the filters,
/// and paging with the cursor while timers are added and removed.
@Suite("Durable timers: the query API")
struct DurableQueryTests {
    @Test(
        "Each status is reached for real and found by its filter: scheduled, due (no runner takes it), running (a handler holds it), retrying (a handler threw), parked; with the lease's owner and end",
        arguments: StoreKind.allCases)
    func statuses(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(
            store: store, namespace: namespace, clock: virtual.clock,
            options: exactOptions {
                $0.maxAttempts = 2
                // Longer than the test's jumps of the clock: the held timer's lease stays current.
                $0.lease = .seconds(3600)
                $0.retryDelay = .seconds(60)
                $0.maxRetryDelay = .seconds(60)
            })
        let started = AsyncGate()
        let finish = AsyncGate()
        try await timers.register("hold", payload: Note.self) { _, _ in
            started.open()
            await finish.wait()
        }
        try await timers.register("throw", payload: Note.self) { note, fire in
            struct Failed: Error {}
            // "retry" fails once (then waits a minute for its retry); "park" fails every time.
            if note.text == "park" || fire.attempt == 1 { throw Failed() }
        }
        await timers.start()
        try await timers.schedule(key: "a-scheduled", at: at(3600), handler: "hold", payload: Note(text: "later"))
        // Scheduled through another (never started) runner that knows a handler this one does not:
        // due, and no runner takes it.
        let elsewhere = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await elsewhere.register("nobody", payload: Note.self) { _, _ in }
        try await elsewhere.schedule(key: "b-due", at: at(1), handler: "nobody", payload: Note(text: "orphan"))
        try await timers.schedule(key: "c-running", at: at(1), handler: "hold", payload: Note(text: "hold"))
        try await timers.schedule(key: "d-retrying", at: at(1), handler: "throw", payload: Note(text: "retry"))
        try await timers.schedule(key: "e-parked", at: at(1), handler: "throw", payload: Note(text: "park"))
        await virtual.advance(by: .seconds(1))
        await started.wait()
        // "park" fails, is retried a minute later, fails again and is parked; "retry" fails once.
        // Both first failures are written (attempts counts claims; the error marks the failure)
        // before the clock moves: a failure written after the jump is retried a minute after it.
        for key in ["d-retrying", "e-parked"] {
            #expect(await eventually { (try? await timers.timer(key: key)).flatMap { $0?.lastError } != nil }, "\(key) failed once")
        }
        // Reached (nudged there until the condition holds): a retry the runner arms after the clock
        // got there runs at the next nudge.
        #expect(await virtual.reach(62) { (try? await timers.timer(key: "e-parked"))?.state == .failed })
        #expect(await virtual.reach(62) { (try? await timers.timer(key: "d-retrying")) == .some(nil) }, "the retry succeeded: the one-shot is gone")
        // A new failing one, to see it retrying.
        try await timers.schedule(key: "d-retrying", at: at(63), handler: "throw", payload: Note(text: "retry"))
        #expect(await virtual.reach(63) { (try? await timers.timer(key: "d-retrying")).flatMap { $0?.lastError } != nil })

        func keys(_ statuses: Set<DurableTimerQuery.Status>) async throws -> [String] {
            try await timers.timers(matching: DurableTimerQuery(statuses: statuses)).timers.map(\.key)
        }
        #expect(try await keys([.scheduled]) == ["a-scheduled"])
        #expect(try await keys([.due]) == ["b-due"])
        #expect(try await keys([.running]) == ["c-running"])
        #expect(try await keys([.retrying]) == ["d-retrying"])
        #expect(try await keys([.parked]) == ["e-parked"])
        #expect(try await keys([.due, .parked]) == ["b-due", "e-parked"])
        #expect(try await keys([]) == ["a-scheduled", "b-due", "c-running", "d-retrying", "e-parked"])
        let running = try #require(try await timers.timers(matching: DurableTimerQuery(statuses: [.running])).timers.first)
        #expect(
            running.owner != nil && running.leaseUntil.map { $0 > at(3600) } == true,
            "\(String(describing: running.owner)) \(String(describing: running.leaseUntil))")
        finish.open()
        await timers.shutdown()
        await store.close()
    }

    @Test(
        "Filters by handler, key prefix and due range; pages of 7 through 100 timers see each once while timers are added and removed between pages",
        arguments: StoreKind.allCases)
    func filtersAndPaging(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        try await timers.register("other", payload: Note.self) { _, _ in }
        let batch = (0..<100).map { (key: "order/\(1000 + $0)", at: at(3600 + Double($0)), payload: Note(text: "\($0)")) }
        try await timers.schedule(batch, handler: "note")
        try await timers.schedule(key: "user/1", at: at(7200), handler: "other", payload: Note(text: "u"))
        try await timers.schedule(key: "ordering", at: at(7200), handler: "other", payload: Note(text: "o"))

        let orders = try await timers.timers(matching: DurableTimerQuery(keyPrefix: "order/", limit: 1000))
        #expect(orders.timers.count == 100 && orders.next == nil)
        #expect(try await timers.timers(matching: DurableTimerQuery(handler: "other")).timers.map(\.key) == ["ordering", "user/1"])
        let window = try await timers.timers(matching: DurableTimerQuery(dueFrom: at(3610), dueBefore: at(3620)))
        #expect(window.timers.map(\.key) == (1010..<1020).map { "order/\($0)" })

        // Paging: between pages, remove keys already seen and keys still ahead, and add keys on
        // both sides of the cursor. Every key present throughout is seen exactly once.
        var seen: [String] = []
        var query = DurableTimerQuery(keyPrefix: "order/", limit: 7)
        var round = 0
        repeat {
            let page = try await timers.timers(matching: query)
            seen += page.timers.map(\.key)
            round += 1
            _ = try await timers.cancel(key: "order/\(1000 + round)")  // behind or at the cursor
            _ = try await timers.cancel(key: "order/\(1099 - round)")  // ahead: never seen
            try await timers.schedule(key: "order/0\(round)", at: at(9000), handler: "note", payload: Note(text: "behind"))
            query.after = page.next.flatMap { DurableTimerQuery.Cursor($0.description) }  // through its text
        } while query.after != nil
        #expect(seen.count == Set(seen).count, "no key twice")
        let throughout = (0..<100).map { "order/\(1000 + $0)" }.filter { key in
            let number = Int(key.dropFirst(6))! - 1000
            return number > round && number < 99 - round
        }
        #expect(Set(throughout).isSubset(of: Set(seen)), "every key present throughout was seen")
        #expect(!seen.contains { $0.hasPrefix("order/0") }, "keys added behind the cursor are not")
        await store.close()
    }

    @Test(
        "Paging through a namespace of 10,000 timers (CI: a million, TIMERKIT_DURABLE_PAGING) in pages of 10,000 sees each timer stored throughout exactly once, while timers are added and removed on both sides of the cursor",
        arguments: StoreKind.allCases)
    func pagingAtScale(kind: StoreKind) async throws {
        let count = ProcessInfo.processInfo.environment["TIMERKIT_DURABLE_PAGING"].flatMap(Int.init) ?? 10_000
        // A million on SQLite only: PostgreSQL's paging is the same statement on an index, and the
        // suite's server is shared by every other test.
        if count > 10_000, kind != .sqlite { return }
        let file = try TemporaryDatabase()
        let (store, namespace) = try await kind.makeStore(file: file)
        let virtual = makeVirtualClock()
        let timers = try DurableTimers(store: store, namespace: namespace, clock: virtual.clock, options: exactOptions())
        try await timers.register("note", payload: Note.self) { _, _ in }
        func key(_ number: Int) -> String { String(format: "k/%07d", number) }
        var number = 0
        while number < count {
            let batch = (number..<min(number + 10_000, count)).map { (key: key($0), at: at(3_600), payload: Note(text: "")) }
            try await timers.schedule(batch, handler: "note")
            number += batch.count
        }
        var seen: [String] = []
        seen.reserveCapacity(count)
        var query = DurableTimerQuery(keyPrefix: "k/", limit: 10_000)
        var removed: Set<String> = []
        var round = 0
        repeat {
            let page = try await timers.timers(matching: query)
            seen += page.timers.map(\.key)
            round += 1
            // Behind the cursor and ahead of it: removed ones, and new keys between existing ones.
            for victim in [key(round * 7), key(count - round * 13)] {
                if try await timers.cancel(key: victim) != .notFound { removed.insert(victim) }
            }
            try await timers.schedule(key: key(round * 5) + "/new", at: at(3_600), handler: "note", payload: Note(text: ""))
            try await timers.schedule(key: key(count - round * 11) + "/new", at: at(3_600), handler: "note", payload: Note(text: ""))
            query.after = page.next
        } while query.after != nil
        #expect(seen.count == Set(seen).count, "no key twice")
        let present = Set(seen)
        let missing = (0..<count).lazy.map(key).filter { !removed.contains($0) && !present.contains($0) }
        #expect(missing.isEmpty, "every key stored throughout was seen; first missing: \(Array(missing.prefix(3)))")
        await store.close()
    }
}
