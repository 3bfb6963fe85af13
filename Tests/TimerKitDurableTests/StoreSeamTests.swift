import Foundation
import Testing

@testable import TimerKit
@testable import TimerKitDurable

/// The store seam, exactly, against every store: what the runner relies on — conflicts, claims and
/// their fencing, leases, moves, paging — holds alike on SQLite and on PostgreSQL.
@Suite("Durable stores: the seam, on each store")
struct StoreSeamTests {
    let second: Int64 = 1_000_000_000

    func record(_ namespace: String, _ key: String, due: Int64, handler: String = "note", recurrence: DurableTimerRecord.Recurrence = .none)
        -> DurableTimerRecord
    {
        DurableTimerRecord(
            namespace: namespace, key: key, handler: handler, payload: Data(#"{"text":"\#(key)"}"#.utf8), recurrence: recurrence, misfire: .once, due: due)
    }

    @Test(
        "put under a key in use: replace gives a new sequence, keep stores nothing, fail throws keyInUse; putAll counts what it stored",
        arguments: StoreKind.allCases)
    func conflicts(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        #expect(try await store.put(record(ns, "a", due: epoch + 10 * second), conflict: .fail))
        let first = try #require(try await store.record(namespace: ns, key: "a"))
        #expect(try await store.put(record(ns, "a", due: epoch + 20 * second), conflict: .replace))
        let replaced = try #require(try await store.record(namespace: ns, key: "a"))
        #expect(replaced.due == epoch + 20 * second && replaced.sequence != first.sequence && replaced.payload == first.payload)
        #expect(try await !store.put(record(ns, "a", due: epoch + 30 * second), conflict: .keep))
        await #expect(throws: DurableTimerError.keyInUse("a")) { try await store.put(record(ns, "a", due: epoch), conflict: .fail) }
        #expect(try await store.record(namespace: ns, key: "a")?.due == epoch + 20 * second, "keep and fail wrote nothing")
        let batch = (0..<100).map { record(ns, "b\($0)", due: epoch + Int64($0) * second) } + [record(ns, "a", due: epoch)]
        #expect(try await store.putAll(batch, conflict: .keep) == 100)
        #expect(try await store.count(namespace: ns) == 101)
        let sequences = try await store.records(namespace: ns, after: nil, limit: 1_000).map(\.sequence)
        #expect(Set(sequences).count == 101, "every occurrence has a sequence of its own")
        await store.close()
    }

    @Test(
        "A claim takes a ready timer once: a second claim finds it held until the lease's end, an early (manual) claim too; a missing or parked timer is gone",
        arguments: StoreKind.allCases)
    func claims(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        _ = try await store.put(record(ns, "k", due: epoch + 10 * second), conflict: .fail)
        let early = try await store.claim(namespace: ns, key: "k", owner: "a", now: epoch + 9 * second, leaseUntil: epoch + 39 * second, early: false)
        guard case .notReady(let readyAt) = early else {
            Issue.record("claimed before due: \(early)")
            return
        }
        #expect(readyAt == epoch + 10 * second)
        let claimed = try #require(
            try await store.claim(namespace: ns, key: "k", owner: "a", now: epoch + 10 * second, leaseUntil: epoch + 40 * second, early: false).record)
        #expect(claimed.owner == "a" && claimed.attempts == 1 && claimed.leaseUntil == epoch + 40 * second && claimed.readyAt == epoch + 40 * second)
        for manual in [false, true] {
            let again = try await store.claim(namespace: ns, key: "k", owner: "b", now: epoch + 20 * second, leaseUntil: epoch + 50 * second, early: manual)
            guard case .notReady(let until) = again else {
                Issue.record("claimed twice: \(again)")
                return
            }
            #expect(until == epoch + 40 * second)
        }
        let afterLease = try #require(
            try await store.claim(namespace: ns, key: "k", owner: "b", now: epoch + 40 * second, leaseUntil: epoch + 70 * second, early: false).record)
        #expect(afterLease.owner == "b" && afterLease.attempts == 2 && afterLease.sequence == claimed.sequence, "the same occurrence, attempt 2")
        if case .gone = try await store.claim(namespace: ns, key: "none", owner: "a", now: epoch, leaseUntil: epoch + second, early: true) {
        } else {
            Issue.record("a missing timer is not gone")
        }
        #expect(try await store.finish(namespace: ns, key: "k", owner: "b", sequence: afterLease.sequence, outcome: .park(error: "boom")))
        if case .gone = try await store.claim(namespace: ns, key: "k", owner: "a", now: epoch + 99 * second, leaseUntil: epoch + 100 * second, early: true) {
        } else {
            Issue.record("a parked timer is not gone")
        }
        #expect(try await store.record(namespace: ns, key: "k").map { ($0.isParked, $0.lastError, $0.owner) } ?? (false, nil, "x") == (true, "boom", nil))
        await store.close()
    }

    @Test(
        "finish, renewAll and release are fenced by the claim's token and the sequence: an expired claim's runner changes nothing; each outcome writes what it says",
        arguments: StoreKind.allCases)
    func fencing(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        _ = try await store.put(record(ns, "r", due: epoch + 10 * second, recurrence: .interval(10 * second)), conflict: .fail)
        let old = try #require(
            try await store.claim(namespace: ns, key: "r", owner: "old", now: epoch + 10 * second, leaseUntil: epoch + 11 * second, early: false).record)
        let new = try #require(
            try await store.claim(namespace: ns, key: "r", owner: "new", now: epoch + 11 * second, leaseUntil: epoch + 41 * second, early: false).record)
        #expect(
            try await store.renewAll(
                namespace: ns, claims: [DurableHeldClaim(key: "r", owner: "old", sequence: old.sequence)], now: epoch + 12 * second,
                leaseUntil: epoch + 99 * second
            ).isEmpty)
        #expect(try await !store.release(namespace: ns, key: "r", owner: "old", sequence: old.sequence, readyAt: epoch))
        #expect(try await !store.finish(namespace: ns, key: "r", owner: "old", sequence: old.sequence, outcome: .delete))
        #expect(
            try await store.renewAll(
                namespace: ns,
                claims: [DurableHeldClaim(key: "r", owner: "new", sequence: new.sequence), DurableHeldClaim(key: "none", owner: "new", sequence: 1)],
                now: epoch + 15 * second, leaseUntil: epoch + 45 * second) == [StoredKey("r")])
        #expect(try await store.record(namespace: ns, key: "r")?.leaseUntil == epoch + 45 * second)
        #expect(
            try await store.finish(
                namespace: ns, key: "r", owner: "new", sequence: new.sequence, outcome: .advance(due: epoch + 20 * second, skipped: 0, fired: true)))
        let advanced = try #require(try await store.record(namespace: ns, key: "r"))
        #expect(advanced.due == epoch + 20 * second && advanced.readyAt == epoch + 20 * second && advanced.fireCount == 1 && advanced.attempts == 0)
        #expect(advanced.owner == nil && advanced.sequence != new.sequence)
        #expect(
            try await !store.finish(namespace: ns, key: "r", owner: "new", sequence: new.sequence, outcome: .delete),
            "a finished occurrence cannot finish twice")
        let third = try #require(
            try await store.claim(namespace: ns, key: "r", owner: "x", now: epoch + 20 * second, leaseUntil: epoch + 50 * second, early: false).record)
        #expect(
            try await store.finish(namespace: ns, key: "r", owner: "x", sequence: third.sequence, outcome: .retry(readyAt: epoch + 25 * second, error: "later"))
        )
        let retried = try #require(try await store.record(namespace: ns, key: "r"))
        #expect(retried.readyAt == epoch + 25 * second && retried.attempts == 1 && retried.lastError == "later" && retried.sequence == third.sequence)
        let fourth = try #require(
            try await store.claim(namespace: ns, key: "r", owner: "y", now: epoch + 25 * second, leaseUntil: epoch + 55 * second, early: false).record)
        #expect(try await store.release(namespace: ns, key: "r", owner: "y", sequence: fourth.sequence, readyAt: epoch + 26 * second))
        #expect(try await store.record(namespace: ns, key: "r").map { ($0.attempts, $0.owner, $0.readyAt) } ?? (0, "?", 0) == (1, nil, epoch + 26 * second))
        let fifth = try #require(
            try await store.claim(namespace: ns, key: "r", owner: "z", now: epoch + 26 * second, leaseUntil: epoch + 56 * second, early: false).record)
        #expect(try await store.finish(namespace: ns, key: "r", owner: "z", sequence: fifth.sequence, outcome: .delete))
        #expect(try await store.record(namespace: ns, key: "r") == nil)
        await store.close()
    }

    @Test(
        "C17: an advance stores a count of skipped occurrences past 2^31 (a millisecond .skip timer down for a month) and reads it back",
        arguments: StoreKind.allCases)
    func skippedCountsPastThirtyTwoBits(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        let millisecond: Int64 = 1_000_000
        _ = try await store.put(record(ns, "tiny", due: epoch + second, recurrence: .interval(millisecond)), conflict: .fail)
        // A month of milliseconds: 2,592,000,000 occurrences, more than a 32-bit column holds.
        let month = 30 * 86_400 * second
        let skipped = Int(month / millisecond)
        #expect(skipped > Int(Int32.max))
        let claim = try #require(
            try await store.claim(namespace: ns, key: "tiny", owner: "a", now: epoch + month, leaseUntil: epoch + month + 30 * second, early: false).record)
        #expect(
            try await store.finish(
                namespace: ns, key: "tiny", owner: "a", sequence: claim.sequence,
                outcome: .advance(due: epoch + month + millisecond, skipped: skipped, fired: false)),
            "the advance is written (PostgreSQL's integer column refused it: out of range)")
        let advanced = try #require(try await store.record(namespace: ns, key: "tiny"))
        #expect(advanced.skipped == skipped && advanced.due == epoch + month + millisecond && advanced.owner == nil)
        await store.close()
    }

    @Test("finishAll removes, in one call, the completed one-shots the owner still holds at their sequence, and only those", arguments: StoreKind.allCases)
    func completionRounds(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        for key in ["a", "b", "c", "d"] { _ = try await store.put(record(ns, key, due: epoch + 10 * second), conflict: .fail) }
        let claimed = try await store.claim(namespace: ns, keys: ["a", "b", "c"], owner: "me", now: epoch + 10 * second, leaseUntil: epoch + 40 * second)
            .claimed
        let sequences = Dictionary(uniqueKeysWithValues: claimed.map { ($0.key, $0.sequence) })
        #expect(sequences.count == 3)
        let other = try #require(
            try await store.claim(namespace: ns, key: "d", owner: "other", now: epoch + 10 * second, leaseUntil: epoch + 40 * second, early: false).record)
        let removed = try await store.finishAll(
            namespace: ns,
            completed: [
                DurableCompletion(key: "a", owner: "me", sequence: sequences["a"]!),
                DurableCompletion(key: "b", owner: "me", sequence: sequences["b"]! + 1_000),  // a sequence it no longer holds
                DurableCompletion(key: "d", owner: "me", sequence: other.sequence),  // held by another claim
                DurableCompletion(key: "none", owner: "me", sequence: 1)
            ])
        #expect(removed == [StoredKey("a")])
        #expect(try await store.record(namespace: ns, key: "a") == nil)
        #expect(try await store.record(namespace: ns, key: "b") != nil)
        #expect(try await store.record(namespace: ns, key: "d") != nil)
        #expect(try await store.finishAll(namespace: ns, completed: []) == [])
        #expect(
            try await store.finishAll(
                namespace: ns,
                completed: [
                    DurableCompletion(key: "b", owner: "me", sequence: sequences["b"]!), DurableCompletion(key: "c", owner: "me", sequence: sequences["c"]!)
                ]) == [StoredKey("b"), StoredKey("c")])
        #expect(try await store.count(namespace: ns) == 1)
        await store.close()
    }

    @Test(
        "move reschedules a timer no runner holds (a new sequence, a parked one active again) and refuses a held one; delete returns what it removed and whether a live claim held it",
        arguments: StoreKind.allCases)
    func moves(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        _ = try await store.put(record(ns, "m", due: epoch + 10 * second), conflict: .fail)
        let before = try #require(try await store.record(namespace: ns, key: "m"))
        let moved = try #require(try await store.move(namespace: ns, key: "m", due: epoch + 30 * second, readyAt: epoch + 30 * second, ifSequence: nil))
        #expect(moved.due == epoch + 30 * second && moved.sequence != before.sequence)
        _ = try await store.claim(namespace: ns, key: "m", owner: "a", now: epoch + 30 * second, leaseUntil: epoch + 60 * second, early: false)
        #expect(try await store.move(namespace: ns, key: "m", due: epoch, readyAt: epoch, ifSequence: nil) == nil, "held by a runner")
        #expect(try await store.move(namespace: ns, key: "none", due: epoch, readyAt: epoch, ifSequence: nil) == nil)
        let removal = try #require(try await store.delete(namespace: ns, key: "m", now: epoch + 31 * second))
        #expect(removal.record.key == "m" && removal.wasClaimed, "the lease runs to 60 s")
        #expect(try await store.delete(namespace: ns, key: "m", now: epoch + 31 * second) == nil)
        _ = try await store.put(record(ns, "e", due: epoch + 10 * second), conflict: .fail)
        _ = try await store.claim(namespace: ns, key: "e", owner: "dead", now: epoch + 10 * second, leaseUntil: epoch + 20 * second, early: false)
        #expect(try await store.delete(namespace: ns, key: "e", now: epoch + 21 * second)?.wasClaimed == false, "its lease had expired")
        await store.close()
    }

    @Test(
        "ready() pages in (ready time, key) order from a cursor, only for the given handlers and not parked; orphans() lists the other handlers' timers; namespaces do not see each other",
        arguments: StoreKind.allCases)
    func reading(kind: StoreKind) async throws {
        let file = try TemporaryDatabase()
        let (store, ns) = try await kind.makeStore(file: file)
        var records = (0..<50).map { record(ns, String(format: "k%02d", $0), due: epoch + Int64($0 % 10) * second) }
        records += [record(ns, "orphan", due: epoch, handler: "gone"), record(ns, "late", due: epoch + 99 * second)]
        records += [record(ns + "-other", "k00", due: epoch)]
        #expect(try await store.putAll(records, conflict: .fail) == 53)
        var cursor: DurableTimerCursor?
        var seen: [DurableReadyTimer] = []
        while true {
            let page = try await store.ready(namespace: ns, by: epoch + 9 * second, handlers: ["note"], after: cursor, limit: 7)
            seen += page
            guard let last = page.last else { break }
            cursor = DurableTimerCursor(readyAt: last.readyAt, key: last.key)
        }
        let expected = records.prefix(50).sorted { ($0.readyAt, $0.key) < ($1.readyAt, $1.key) }.map(\.key)
        #expect(seen.map(\.key) == expected)
        #expect(try await store.orphans(namespace: ns, handlers: ["note"], limit: 10).map(\.key) == ["orphan"])
        #expect(try await store.count(namespace: ns) == 52)
        #expect(try await store.count(namespace: ns + "-other") == 1)
        #expect(try await store.ready(namespace: ns, by: epoch, handlers: [], after: nil, limit: 10).isEmpty)
        await store.close()
    }
}
