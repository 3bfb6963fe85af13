import Foundation
import Testing
import TimerKit
import TimerKitTesting

@testable import TimerKitDurable

/// The misfire policies (C5's vocabulary, for downtime), occurrence by occurrence: a pure function
/// of the stored timer and the time it is claimed.
@Suite("Misfire plans")
struct OccurrencePlanTests {
    let second: Int64 = 1_000_000_000

    func record(every interval: Int64?, due: Int64, misfire: MisfirePolicy, skipped: Int = 0) -> DurableTimerRecord {
        var record = DurableTimerRecord(
            namespace: "n", key: "k", handler: "h", payload: Data(), recurrence: interval.map { .interval($0) } ?? .none, misfire: misfire, due: due)
        record.skipped = skipped
        return record
    }

    @Test("C4, C5: once — after 35 s down, a 10 s timer fires once for the 4 occurrences from its first missed one, then continues on its grid")
    func once() {
        let plan = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .once), now: 135 * second, grace: second)
        #expect(
            plan
                == OccurrencePlan(
                    fires: true, scheduledDeadline: 100 * second, deadlineCount: 4, skippedCount: 0, next: .advance(due: 140 * second, skipped: 0, fired: true))
        )
    }

    @Test("C5: skip — missed occurrences get no fire and are counted in the next; one reached within the grace fires")
    func skip() {
        let late = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .skip), now: 135 * second, grace: second)
        #expect(
            late
                == OccurrencePlan(
                    fires: false, scheduledDeadline: 130 * second, deadlineCount: 0, skippedCount: 0,
                    next: .advance(due: 140 * second, skipped: 4, fired: false)))
        let next = OccurrencePlan.make(record(every: 10 * second, due: 140 * second, misfire: .skip, skipped: 4), now: 140 * second + 5_000_000, grace: second)
        #expect(
            next
                == OccurrencePlan(
                    fires: true, scheduledDeadline: 140 * second, deadlineCount: 1, skippedCount: 4, next: .advance(due: 150 * second, skipped: 0, fired: true))
        )
        let withinGrace = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .skip), now: 130 * second + second / 2, grace: second)
        #expect(withinGrace.fires && withinGrace.scheduledDeadline == 130 * second && withinGrace.skippedCount == 3)
        let oneShot = OccurrencePlan.make(record(every: nil, due: 100 * second, misfire: .skip), now: 135 * second, grace: second)
        #expect(!oneShot.fires && oneShot.next == .delete)
    }

    @Test("C5: all(max:) — one fire per missed occurrence, the latest max of them; the older ones are counted as skipped")
    func all() {
        let first = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .all(max: 2)), now: 135 * second, grace: second)
        #expect(
            first
                == OccurrencePlan(
                    fires: true, scheduledDeadline: 120 * second, deadlineCount: 1, skippedCount: 2, next: .advance(due: 130 * second, skipped: 0, fired: true))
        )
        let secondRun = OccurrencePlan.make(record(every: 10 * second, due: 130 * second, misfire: .all(max: 2)), now: 135 * second, grace: second)
        #expect(
            secondRun
                == OccurrencePlan(
                    fires: true, scheduledDeadline: 130 * second, deadlineCount: 1, skippedCount: 0, next: .advance(due: 140 * second, skipped: 0, fired: true))
        )
    }

    @Test(
        "C5: within(window) — the occurrences missed by at most the window are coalesced into one fire; older ones are skipped; a one-shot past it is removed")
    func within() {
        let plan = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .within(.seconds(12))), now: 135 * second, grace: second)
        #expect(
            plan
                == OccurrencePlan(
                    fires: true, scheduledDeadline: 130 * second, deadlineCount: 1, skippedCount: 3, next: .advance(due: 140 * second, skipped: 0, fired: true))
        )
        let wider = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .within(.seconds(20))), now: 135 * second, grace: second)
        #expect(wider.scheduledDeadline == 120 * second && wider.deadlineCount == 2 && wider.skippedCount == 2)
        let none = OccurrencePlan.make(record(every: 10 * second, due: 100 * second, misfire: .within(.seconds(2))), now: 135 * second, grace: second)
        #expect(
            none
                == OccurrencePlan(
                    fires: false, scheduledDeadline: 130 * second, deadlineCount: 0, skippedCount: 0,
                    next: .advance(due: 140 * second, skipped: 4, fired: false)))
        let oneShot = OccurrencePlan.make(record(every: nil, due: 100 * second, misfire: .within(.seconds(2))), now: 135 * second, grace: second)
        #expect(!oneShot.fires && oneShot.next == .delete)
    }

    @Test(
        "C5: under every policy, a 7 s timer's fires account for each occurrence exactly once through deadlineCount + skippedDeadlineCount, across random downtimes",
        arguments: [MisfirePolicy.once, .skip, .all(max: 3), .within(.seconds(20))])
    func occurrencesAddUp(policy: MisfirePolicy) {
        var generator = SeededRandom(seed: 17)
        var stored = record(every: 7 * second, due: 7 * second, misfire: policy)
        var now: Int64 = 0
        var accounted = 0
        for _ in 0..<2_000 {
            now = max(now, stored.due) + Int64.random(in: 0...(40 * second), using: &generator)
            let plan = OccurrencePlan.make(stored, now: now, grace: second)
            if plan.fires { accounted += plan.deadlineCount + plan.skippedCount }
            guard case .advance(let due, let skipped, _) = plan.next else {
                Issue.record("a repeating timer ended")
                return
            }
            stored.due = due
            stored.skipped = skipped
        }
        // Every occurrence before the stored one is accounted for, but those carried as skipped.
        #expect(accounted + stored.skipped == Int(stored.due / (7 * second)) - 1)
    }

    @Test(
        "C5: after three days down, a per-second calendar schedule fires once under .once (not once per 10,000 occurrences), its next due the first second after now; .skip and .all(max:) read the occurrences just before now",
        arguments: [MisfirePolicy.once, .skip, .all(max: 3), .within(.seconds(5))])
    func longOutageOfACalendarSchedule(policy: MisfirePolicy) throws {
        let utc = try #require(TimeZone(identifier: "UTC"))
        let schedule = try CalendarSchedule(cron: "* * * * * *", in: utc)
        let due: Int64 = 1_800_000_000 * second
        let now = due + 3 * 86_400 * second + second / 2
        let stored = DurableTimerRecord(namespace: "n", key: "k", handler: "h", payload: Data(), recurrence: .schedule(schedule), misfire: policy, due: due)
        let plan = OccurrencePlan.make(stored, now: now, grace: second)
        let lastSecond = now - second / 2
        switch policy {
        case .once:
            #expect(plan.fires && plan.scheduledDeadline == due && plan.deadlineCount == OccurrencePlan.countLimit)
            #expect(plan.next == .advance(due: lastSecond + second, skipped: 0, fired: true), "one fire, then the grid after now")
        case .skip:
            #expect(plan.fires && plan.scheduledDeadline == lastSecond && plan.deadlineCount == 1, "the occurrence within the grace fires")
            #expect(plan.next == .advance(due: lastSecond + second, skipped: 0, fired: true))
        case .all:
            #expect(plan.fires && plan.scheduledDeadline == lastSecond - 2 * second, "the third-latest occurrence first")
            #expect(plan.next == .advance(due: lastSecond - second, skipped: 0, fired: true), "then the two after it")
        case .within:
            #expect(plan.fires && plan.scheduledDeadline == lastSecond - 4 * second && plan.deadlineCount == 5, "the occurrences of the last 5 s")
            #expect(plan.next == .advance(due: lastSecond + second, skipped: 0, fired: true))
        }
        // Claimed again at its next due, it is back on the grid with no more catching up.
        if case .advance(let next, let skipped, _) = plan.next {
            var again = stored
            (again.due, again.skipped) = (next, skipped)
            let following = OccurrencePlan.make(again, now: next, grace: second)
            #expect(following.fires && following.scheduledDeadline == next && following.next == .advance(due: next + second, skipped: 0, fired: true))
        }
    }

    @Test("C7: a manual fire stands for no occurrence; a one-shot ends, a repeating timer keeps its next occurrence")
    func manual() {
        #expect(OccurrencePlan.manual(record(every: nil, due: 100 * second, misfire: .once), now: 5).next == .delete)
        let repeating = OccurrencePlan.manual(record(every: second, due: 100 * second, misfire: .once), now: 5)
        #expect(
            repeating
                == OccurrencePlan(
                    fires: true, scheduledDeadline: 5, deadlineCount: 0, skippedCount: 0, next: .advance(due: 100 * second, skipped: 0, fired: true)))
    }
}
