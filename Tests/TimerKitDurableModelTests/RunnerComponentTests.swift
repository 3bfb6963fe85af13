import Testing

@testable import TimerKitDurable

/// The parts the runner's state machine is composed of, each alone: renewals, handler slots, the
/// backlog's sweep, the lease checks and the loads. The seeded model (`RunnerModelTests`) checks them
/// together, under random events.
@Suite("The runner's state machine: its parts")
struct RunnerComponentTests {
    let a = StoredKey("a")
    let b = StoredKey("b")

    @Test("Renewals: the tick is armed once until it comes; lease fixes go at once, or wait for the renewal in flight")
    func renewalTickAndFixes() {
        var renewals = Renewals()
        var armed = [renewals.armTick(), renewals.armTick()]
        renewals.tickCame()
        armed.append(renewals.armTick())
        #expect(armed == [true, false, true], "armed once until it comes")

        renewals.needsFix(a)
        let first = renewals.keys(for: .fixes, held: [a, b])
        #expect(first == [a])
        renewals.sent(.fixes)
        renewals.needsFix(b)
        let during = renewals.keys(for: .fixes, held: [a, b])
        #expect(during == nil, "one renewal in flight at a time")
        let next = renewals.ended()
        #expect(next == .fixes, "the fix that waited goes next")
        let second = renewals.keys(for: .fixes, held: [a, b])
        #expect(second == [b])
        renewals.sent(.fixes)
        let last = renewals.ended()
        #expect(last == nil, "nothing waits")
    }

    @Test("Renewals: a tick during a renewal of fixes renews every claim once it is back; a tick during a renewal of every claim adds nothing")
    func renewalTickDuringAFlight() {
        var renewals = Renewals()
        renewals.needsFix(a)
        _ = renewals.keys(for: .fixes, held: [a, b])
        renewals.sent(.fixes)
        let duringFixes = renewals.keys(for: .all, held: [a, b])
        #expect(duringFixes == nil)
        #expect(renewals.flight == .fixes(thenAll: true))
        let afterFixes = renewals.ended()
        #expect(afterFixes == .all)
        let all = renewals.keys(for: .all, held: [a, b])
        #expect(Set(all ?? []) == [a, b])
        renewals.sent(.all)
        let duringAll = renewals.keys(for: .all, held: [a, b])
        #expect(duringAll == nil)
        #expect(renewals.flight == .all, "covered by the renewal in flight")
        renewals.needsFix(b)
        let afterAll = renewals.ended()
        #expect(afterAll == .fixes)
        // A renewal of every claim covers the fixes that waited.
        let covering = renewals.keys(for: .all, held: [a, b])
        #expect(covering != nil && renewals.fixes.isEmpty)
    }

    @Test("Admission: slots add up across handlers; a limited handler has room up to its limit; keys wait in order per handler")
    func admission() {
        var admission = Admission(capacity: 3)
        admission.setLimit(1, for: "report")
        #expect(admission.free == 3 && admission.hasRoom("report") && admission.hasRoom("mail"))
        admission.take()
        let took = [admission.takeHandlerSlot("report"), admission.takeHandlerSlot("mail")]
        #expect(took == [true, false], "a handler with no limit of its own has no slots of its own")
        #expect(!admission.hasRoom("report") && admission.hasRoom("mail"))
        #expect(admission.fullHandlers == ["report"])
        admission.take(2)
        #expect(admission.free == 0)
        admission.wait(a, for: "report")
        admission.wait(b, for: "report")
        #expect(admission.waitingHandlers == ["report"])
        admission.giveHandlerSlot("report")
        admission.give(3)
        #expect(admission.free == 3 && admission.takenByHandler.isEmpty && admission.hasRoom("report"))
        let order = [admission.nextWaiting(for: "report"), admission.nextWaiting(for: "report"), admission.nextWaiting(for: "report")]
        #expect(order == [a, b, nil], "in the order they came due")
        admission.dropQueueIfEmpty(for: "report")
        #expect(admission.waitingHandlers.isEmpty)
    }

    @Test(
        "Backlog sweep: credit starts at a tenth of a tick, grows a tick at a time up to two, and a sweep spends it; between ticks a sweep waits for half the slots; a sweep that finds fewer than it asked for ends the backlog"
    )
    func sweepCredit() {
        var sweep = BacklogSweep(tick: 10_000_000, creditPerTick: 100)
        let armedWithout = sweep.armTick()
        #expect(!armedWithout, "no tick without a backlog")
        sweep.begin()
        #expect(sweep.isPending && sweep.credit == 10)
        let armed = [sweep.armTick(), sweep.armTick()]
        #expect(armed == [true, false])
        let ticks = [sweep.tickCame()]
        #expect(ticks == [true] && sweep.credit == 110)
        _ = (sweep.tickCame(), sweep.tickCame())
        #expect(sweep.credit == 200, "at most two ticks' worth")
        #expect(sweep.mayStart(freeSlots: 16, capacity: 16, anyHandlerHasRoom: true))
        #expect(!sweep.mayStart(freeSlots: 0, capacity: 16, anyHandlerHasRoom: true))
        #expect(!sweep.mayStart(freeSlots: 16, capacity: 16, anyHandlerHasRoom: false))
        let limit = sweep.start(freeSlots: 16, skipping: [])
        #expect(limit == 16 && sweep.credit == 184 && sweep.inFlight == 16)
        // Until the next tick, a sweep waits for half the slots: slots that free one by one are
        // swept together, not one row at a time.
        #expect(!sweep.mayStart(freeSlots: 1, capacity: 16, anyHandlerHasRoom: true))
        #expect(!sweep.mayStart(freeSlots: 7, capacity: 16, anyHandlerHasRoom: true))
        #expect(sweep.mayStart(freeSlots: 8, capacity: 16, anyHandlerHasRoom: true))
        _ = sweep.tickCame()
        #expect(sweep.mayStart(freeSlots: 1, capacity: 16, anyHandlerHasRoom: true), "a tick lets a free slot be swept")
        let full = sweep.ended(found: 16, limit: 16)
        #expect(full == nil && sweep.isPending && sweep.inFlight == 0, "found all it asked for: more may wait")
        _ = sweep.start(freeSlots: 16, skipping: [])
        let short = sweep.ended(found: 3, limit: 16)
        #expect(short == .afterLease, "ended; it claimed some, so it looks again after a lease")
        let tickAfter = sweep.tickCame()
        #expect(!sweep.isPending && !tickAfter)
        sweep.begin()
        _ = sweep.start(freeSlots: 4, skipping: [])
        let failed = sweep.ended(found: nil, limit: 4)
        #expect(failed == .afterRetryDelay, "a failed sweep is tried again after the retry delay")
        sweep.begin()
        _ = sweep.start(freeSlots: 4, skipping: [])
        let empty = sweep.ended(found: 0, limit: 4)
        #expect(empty == nil, "an empty backlog: nothing to look at again")
    }

    @Test(
        "Backlog sweep: a handler left out for want of room is swept next once it has room, and its room is kept for that sweep; turns alternate with woken keys"
    )
    func sweepLeftOutAndTurns() {
        var sweep = BacklogSweep(tick: 10_000_000, creditPerTick: 100)
        sweep.begin()
        _ = sweep.start(freeSlots: 8, skipping: ["report"])
        #expect(sweep.skipped == ["report"])
        _ = sweep.ended(found: 2, limit: 8)
        let revived = [sweep.revive(where: { _ in false }), sweep.revive(where: { $0 == "report" })]
        #expect(revived == [false, true], "swept again once it has room")
        #expect(sweep.owes("report") && sweep.isPending && sweep.isTurn)
        _ = sweep.start(freeSlots: 8, skipping: [])
        #expect(!sweep.owes("report") && !sweep.isTurn)
        sweep.keysWent()
        #expect(sweep.isTurn, "a round of keys went while the backlog waits: the sweep is next")
        sweep.stop()
        sweep.keysWent()
        #expect(!sweep.isPending && !sweep.isTurn)
    }

    @Test("Lease checks: one a second at most, at the first whole second after the lease's end; armed again once it came")
    func leaseChecks() {
        var checks = LeaseChecks()
        let instants = [
            checks.arm(after: 1_200_000_000), checks.arm(after: 1_900_000_000), checks.arm(after: 2_000_000_000), checks.arm(after: 2_000_000_001)
        ]
        #expect(instants == [2_000_000_000, nil, nil, 3_000_000_000], "the same second once; a whole second is its own")
        checks.came(at: 2_000_000_000)
        let again = checks.arm(after: 1_500_000_000)
        #expect(again == 2_000_000_000)
        let end = checks.arm(after: .max)
        #expect(end != nil, "no overflow at the end of time")
    }

    @Test("Loads: one load of the horizon at a time; requests that come meanwhile are served by one more load, however many they are")
    func horizonLoadsCoalesce() {
        var loads = Loads()
        let first = loads.requestHorizon()
        let during = [loads.requestHorizon(), loads.requestHorizon(), loads.requestHorizon()]
        #expect(first && during == [false, false, false])
        #expect(loads.horizon == .loading(again: true))
        let again = loads.horizonEnded()
        #expect(again, "the requests that came are served by one more load")
        let done = loads.horizonEnded()
        #expect(!done && loads.horizon == .idle, "and no more")
        let next = loads.requestHorizon()
        #expect(next, "a request after the loads begins one")
    }

    @Test("Loads: a horizon cut short goes on from its cursor, unless a reload came while it read; then it starts from the beginning")
    func horizonPieces() {
        let cut = DurableTimerCursor(readyAt: 42, key: "k")
        var loads = Loads()
        let start = loads.start
        #expect(start.after == nil)
        loads.horizonRead(from: start, cutAt: cut)
        #expect(loads.start.after == cut, "the next piece goes on from the cursor")
        let piece = loads.start
        loads.reload()
        #expect(loads.start.after == nil)
        loads.horizonRead(from: piece, cutAt: DurableTimerCursor(readyAt: 50, key: "m"))
        #expect(loads.resumeAfter == nil, "a load that began before the reload leaves no cursor")
        loads.horizonRead(from: loads.start, cutAt: nil)
        #expect(loads.resumeAfter == nil, "a load that read everything leaves none either")
    }

    @Test("Loads: one window load at a time; the windows asked for meanwhile are merged into one load after it")
    func windowsMerge() {
        var loads = Loads()
        let first = loads.requestWindow(10...20)
        let during = [loads.requestWindow(30...40), loads.requestWindow(5...8)]
        #expect(first == 10...20 && during == [nil, nil])
        let merged = loads.windowEnded()
        #expect(merged == 5...40)
        let none = loads.windowEnded()
        #expect(none == nil && loads.window == .idle)
    }
}
