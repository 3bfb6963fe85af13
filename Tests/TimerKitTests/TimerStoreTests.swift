import Testing
import TimerKitTesting

@testable import TimerKit

/// C2, C3, C16: the engine's store — the timing wheel and the heap alone — against a reference model.
@Suite("Timer store")
struct TimerStoreTests {
    /// An entry as the reference model sees it.
    struct ModelEntry {
        var index: Int32
        var deadline: Int64
        var key: Int64
        var sequence: UInt32
    }

    static let tick: Int64 = 1 << TimerStore.tickShift

    /// Counts the broken promises instead of expecting per step: an expectation per step would
    /// dominate the run in a debug build.
    struct Mismatches {
        var order = 0
        var early = 0
        var leftBehind = 0
        var lateWakeUp = 0
        var spinningWakeUp = 0
        var count = 0
        var invariants = 0
        var firstViolation: String?
    }

    @Test(
        "C2, C3, C10, C16: through random inserts, cancels, moves and advances, both layouts pop entries in (key, creation) order, never before their deadline, never leave one whose key has come, wake in time without spinning, and keep their structure sound after every step",
        arguments: [TimerStore.Layout.wheel, .heap], [1, 2, 3, 42, 2026] as [UInt64])
    func storeMatchesReferenceModel(layout: TimerStore.Layout, seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var now: Int64 = 1_000 * Self.tick + 12_345
        var store = TimerStore(layout: layout, now: now)
        var model: [ModelEntry] = []
        var sequence: UInt32 = 0
        var mismatches = Mismatches()
        var popped = 0

        func precedes(_ a: ModelEntry, _ b: ModelEntry) -> Bool {
            a.key < b.key || (a.key == b.key && a.sequence < b.sequence)
        }
        func modelFirst() -> Int? {
            model.indices.min { precedes(model[$0], model[$1]) }
        }

        for _ in 0..<4_000 {
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<9:
                // Deadlines from the past to far ahead, on every level of the wheel; few distinct
                // values near now, so that ties are common.
                let scale = [Int64(0), 3, Self.tick, 64 * Self.tick, 4_096 * Self.tick, 20_000 * Self.tick, 1 << 40][Int.random(in: 0..<7, using: &random)]
                let deadline = now - 50 + Int64.random(in: 0...max(scale, 100), using: &random)
                let slack = Self.randomSlack(&random)
                let index = store.insert(.none, deadline: deadline, slack: slack, sequence: sequence)
                model.append(ModelEntry(index: index, deadline: deadline, key: deadline + slack, sequence: sequence))
                sequence += 1
            case 9..<12 where !model.isEmpty:
                let position = Int.random(in: 0..<model.count, using: &random)
                _ = store.remove(model[position].index)
                model.remove(at: position)
            case 12..<15 where !model.isEmpty:
                // A reset: mostly later than the entry's deadline (an idle timeout pushed back,
                // which a wheel entry takes in place while it stays in its bucket), sometimes anywhere;
                // the creation order stays.
                let position = Int.random(in: 0..<model.count, using: &random)
                let scale = [Int64(3), Self.tick, 64 * Self.tick, 4_096 * Self.tick, 1 << 40][Int.random(in: 0..<5, using: &random)]
                let base = Int.random(in: 0..<4, using: &random) == 0 ? now - 50 : model[position].deadline
                let deadline = base + Int64.random(in: 0...scale, using: &random)
                let slack = Bool.random(using: &random) ? model[position].key - model[position].deadline : Self.randomSlack(&random)
                store.move(model[position].index, deadline: deadline, slack: slack)
                model[position].deadline = deadline
                model[position].key = deadline + slack
            default:
                now += [Int64(1), Self.tick / 3, 5 * Self.tick, 300 * Self.tick, 1 << 33][Int.random(in: 0..<5, using: &random)]
                while let (_, deadline) = store.removeFirst(dueBy: now) {
                    popped += 1
                    guard let first = modelFirst() else {
                        mismatches.order += 1
                        break
                    }
                    if model[first].deadline != deadline { mismatches.order += 1 }
                    if deadline > now { mismatches.early += 1 }
                    model.remove(at: first)
                }
                // Everything whose key has come was popped (C3), and popping stopped exactly where
                // the heap alone stops: at the first entry, in key order, whose deadline is ahead.
                if model.contains(where: { $0.key <= now }) { mismatches.leftBehind += 1 }
                if let first = modelFirst(), model[first].deadline <= now { mismatches.leftBehind += 1 }
                // The engine wakes in time for the first key, and never for a time already past
                // (that would spin) — also when it wakes early by the time its deliveries take.
                if let first = modelFirst() {
                    let reserve = Bool.random(using: &random) ? 0 : Int64.random(in: 0...(200 * Self.tick), using: &random)
                    let wakeUp = store.wakeUpTime(now: now, reserve: reserve) ?? .max
                    if wakeUp > model[first].key { mismatches.lateWakeUp += 1 }
                    if wakeUp <= now { mismatches.spinningWakeUp += 1 }
                }
            }
            if store.count != model.count { mismatches.count += 1 }
            let violations = store.invariantViolations()
            if !violations.isEmpty {
                mismatches.invariants += 1
                mismatches.firstViolation = mismatches.firstViolation ?? violations[0]
            }
        }
        #expect(popped > 500)
        #expect(mismatches.order == 0)
        #expect(mismatches.early == 0)
        #expect(mismatches.leftBehind == 0)
        #expect(mismatches.lateWakeUp == 0)
        #expect(mismatches.spinningWakeUp == 0)
        #expect(mismatches.count == 0)
        #expect(mismatches.invariants == 0, "the store's structure is sound after every step: \(mismatches.firstViolation ?? "")")
        #expect(store.removeAll().count == model.count)
        #expect(store.count == 0)
    }

    /// None half the time; else up to 100 ticks, or up to the most the store keeps (UInt32.max ns,
    /// about 4.3 s: an entry whose deadline has come while its key is in a far bucket).
    static func randomSlack(_ random: inout SeededRandom) -> Int64 {
        switch Int.random(in: 0..<8, using: &random) {
        case 0..<4: 0
        case 4..<7: Int64.random(in: 0...(100 * tick), using: &random)
        default: Int64.random(in: 0...Int64(UInt32.max), using: &random)
        }
    }

    @Test("C3: the wake-up comes the delivery reserve before the first key, never before that entry's deadline, never after its key")
    func wakeUpReserve() {
        let now: Int64 = 1_000 * Self.tick
        for (slack, reserve) in [(Int64(0), Int64(500_000)), (2_000_000, 500_000), (2_000_000, 3_000_000), (2_000_000, 0)] {
            var store = TimerStore(layout: .wheel, now: now)
            let deadline = now + 10 * Self.tick
            _ = store.insert(.none, deadline: deadline, slack: slack, sequence: 1)
            _ = store.insert(.none, deadline: deadline + 100 * Self.tick, slack: 0, sequence: 2)
            #expect(store.wakeUpTime(now: now, reserve: reserve) == max(deadline + slack - reserve, deadline), "slack \(slack), reserve \(reserve)")
        }
    }

    @Test("C16: a slab reuses freed entries and gives its pages back once empty", arguments: [TimerStore.Layout.wheel, .heap])
    func slabReusesEntries(layout: TimerStore.Layout) {
        var store = TimerStore(layout: layout)
        let first = (0..<3_000).map { store.insert(.none, deadline: Int64($0) << 22, slack: 0, sequence: UInt32($0)) }
        for index in first { _ = store.remove(index) }
        #expect(store.count == 0)
        let again = store.insert(.none, deadline: 5, slack: 0, sequence: 9)
        #expect(again == 0, "the pages were reset")
        _ = store.remove(again)
        let a = store.insert(.none, deadline: 5, slack: 0, sequence: 10)
        let b = store.insert(.none, deadline: 6, slack: 0, sequence: 11)
        _ = store.remove(a)
        let c = store.insert(.none, deadline: 7, slack: 0, sequence: 12)
        #expect(c == a, "a freed entry is reused")
        #expect(store.removeFirst(dueBy: 100)?.deadline == 6)
        #expect(store.removeFirst(dueBy: 100)?.deadline == 7)
        #expect(store.removeFirst(dueBy: 100) == nil)
        _ = b
    }

    @Test(
        "C16: of 20,000 entries due over 2 s, the heap holds only the ticks being fired, the rest waiting in the ring, and all come out in (key, creation) order"
    )
    func ringFeedsTheHeapTickByTick() {
        let now: Int64 = 1_000 * Self.tick
        var store = TimerStore(layout: .wheel, now: now)
        var random = SeededRandom(seed: 21)
        var perTick: [Int64: Int] = [:]
        var model: [(key: Int64, sequence: UInt32)] = []
        for sequence in 0..<UInt32(20_000) {
            let deadline = now + Self.tick + Int64.random(in: 0..<(2_000 * Self.tick), using: &random)
            _ = store.insert(.none, deadline: deadline, slack: 0, sequence: sequence)
            perTick[deadline >> TimerStore.tickShift, default: 0] += 1
            model.append((deadline, sequence))
        }
        #expect(store.ringCount == 20_000, "every entry is near, within the ring's span")
        model.sort { $0.key < $1.key || ($0.key == $1.key && $0.sequence < $1.sequence) }
        var largestHeap = 0
        var mismatches = 0
        for expected in model {
            guard let (_, deadline) = store.removeFirst(dueBy: expected.key) else {
                mismatches += 1
                break
            }
            if deadline != expected.key { mismatches += 1 }
            largestHeap = max(largestHeap, store.heap.count)
        }
        #expect(mismatches == 0)
        #expect(store.count == 0 && store.ringCount == 0)
        // At most the tick being fired and the next one are in the heap, and two entries opened
        // ahead per pop: never more than the two fullest ticks.
        let twoFullest = perTick.values.sorted(by: >).prefix(2).reduce(0, +)
        #expect(largestHeap <= twoFullest, "the heap held \(largestHeap) entries; the two fullest ticks hold \(twoFullest)")
        #expect(largestHeap < 100)
    }

    @Test("C2, C17: the end of time never comes, and a tolerance cannot push a key past it", arguments: [TimerStore.Layout.wheel, .heap])
    func endOfTime(layout: TimerStore.Layout) {
        var store = TimerStore(layout: layout)
        // The slack is clamped so that the key is Int64.max rather than overflowing.
        _ = store.insert(.none, deadline: .max - 10, slack: 1_000_000, sequence: 0)
        _ = store.insert(.none, deadline: .max, slack: 0, sequence: 1)
        #expect(store.removeFirst(dueBy: .max - 1)?.deadline == Int64.max - 10)
        #expect(store.removeFirst(dueBy: .max) == nil, "a deadline at Int64.max is never due")
        #expect(store.count == 1)
    }
}
