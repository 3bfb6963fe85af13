import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// The timer's state machine on its own: plain integers for instants, no engine, no clock, no
/// handler. A small model of the engine — a store that holds the machine exactly when it says so,
/// and a virtual advance that takes it out at its deadline and asks for steps until the delivery
/// ends — drives it through seeded random sequences of the timer's API.
@Suite("Timer state machine")
struct TimerStateMachineTests {
    /// The engine, reduced to what the machine's actions ask of it.
    struct Model {
        var machine: TimerStateMachine
        var now: Int64
        var isStored = false
        var isShutDown = false
        var fires: [TimerStateMachine.Fire] = []
        /// What broke an invariant, with its context; the tests expect none. (Collected rather than
        /// expected here, so that the model can run on a thread outside any test's task.)
        var violations: [String] = []

        init(firstDeadline: Int64, interval: Int64, policy: MissedDeadlinePolicy, now: Int64, suspended: Bool) {
            machine = TimerStateMachine(firstDeadline: firstDeadline, interval: interval, policy: policy)
            self.now = now
            carryOut(machine.register(suspended: suspended))
        }

        /// What the engine does with a store action; delivers when the caller now holds the delivery.
        mutating func carryOut(_ action: TimerStateMachine.StoreAction) {
            switch action {
            case .none: break
            case .place: isStored = true
            case .remove: isStored = false
            case .deliver:
                isStored = false
                deliver()
            }
        }

        /// The delivery: steps until one that is not a run.
        mutating func deliver() {
            while true {
                switch machine.nextStep(now: now, isShutDown: isShutDown) {
                case .run(let fire):
                    fires.append(fire)
                case .runFinal(let fire):
                    fires.append(fire)
                    return
                case .store(let deadline):
                    if deadline != machine.nextDeadline { violations.append("stored at \(deadline), next deadline \(machine.nextDeadline)") }
                    isStored = true
                    return
                case .park, .invalidated:
                    return
                }
            }
        }

        /// A virtual clock's advance: the stored timer fires at each deadline on the way, with the
        /// clock at that deadline; with `jumping`, the clock is at `target` first.
        mutating func advance(to target: Int64, jumping: Bool = false) {
            if jumping { now = max(now, target) }
            while isStored, machine.nextDeadline <= target, machine.nextDeadline != .max {
                now = max(now, machine.nextDeadline)
                isStored = false
                machine.takeForDelivery()
                deliver()
            }
            now = max(now, target)
        }

        /// The engine's invariant: stored exactly when active, not suspended and not running; and
        /// between calls no delivery holds the timer.
        mutating func checkInvariant(_ context: @autoclosure () -> String) {
            let shouldBeStored = machine.lifecycle == .active && !machine.isSuspended && !machine.isRunning
            if isStored != shouldBeStored { violations.append("\(context()): stored \(isStored), should be \(shouldBeStored)") }
            if machine.isRunning { violations.append("\(context()): running between calls") }
        }
    }

    static let policies: [MissedDeadlinePolicy] = [.coalesce, .skip, .burst(maxFires: 1), .burst(maxFires: 3)]

    @Test(
        "C5, C2, C9, C7: over 100,000 seeded sequences of stalls, jumps, suspensions and manual fires, a repeating timer's fires account for each grid deadline exactly once, none is early, and the store holds the timer exactly when the machine says so"
    )
    func gridDeadlinesAreAccountedForExactlyOnce() async {
        // Seconds of computing without a suspension: on a thread of its own, not the test pool's.
        let failures = await onOwnThread(Self.accountForGridDeadlines)
        for failure in failures { Issue.record(Comment(rawValue: failure)) }
        #expect(failures.isEmpty)
    }

    /// 100,000 sequences in the suite; CI's sanitizer runs take fewer (`TIMERKIT_MODEL_SEQUENCES`):
    /// the model runs on one thread, so a sanitizer finds nothing more in it than the suite does.
    static let sequences = ProcessInfo.processInfo.environment["TIMERKIT_MODEL_SEQUENCES"].flatMap(Int.init) ?? 100_000

    /// Runs the sequences; returns a description of each that failed (at most five).
    @Sendable static func accountForGridDeadlines() -> [String] {
        var random = SeededRandom(seed: 20_261_125)
        var failures: [String] = []
        for sequence in 0..<sequences where failures.count < 5 {
            let policy = Self.policies[sequence % Self.policies.count]
            let interval = Int64.random(in: 1...1_000, using: &random)
            let start = Int64.random(in: 0...1_000_000, using: &random)
            let first = start + Int64.random(in: 0...(3 * interval), using: &random)
            var model = Model(firstDeadline: first, interval: interval, policy: policy, now: start, suspended: Bool.random(using: &random))
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let step = Int64.random(in: 0...(4 * interval), using: &random)
                switch Int.random(in: 0..<10, using: &random) {
                case 0: model.advance(to: model.now + step * 5, jumping: true)
                case 1: model.carryOut(model.machine.suspend().action)
                case 2: model.carryOut(model.machine.resume(now: model.now, isShutDown: false).action)
                case 3: model.carryOut(model.machine.requestManualFire(isShutDown: false).action)
                default: model.advance(to: model.now + step)
                }
                model.checkInvariant("sequence \(sequence)")
            }
            // Resume, then one ordinary deadline after a jump, so that deadlines skipped last are
            // reported.
            model.carryOut(model.machine.resume(now: model.now, isShutDown: false).action)
            model.advance(to: model.now + 20 * interval, jumping: true)
            model.advance(to: model.machine.nextDeadline)

            var accounted: Int64 = 0
            var wellFormed = true
            for (number, fire) in model.fires.enumerated() {
                wellFormed = wellFormed && fire.sequenceNumber == number + 1 && fire.firedAt >= fire.scheduledDeadline
                guard fire.deadlineCount > 0 else {
                    // C7: a manual fire accounts for no deadline and fires at the moment it runs.
                    wellFormed = wellFormed && fire.skippedDeadlineCount == 0 && fire.scheduledDeadline == fire.firedAt
                    continue
                }
                accounted += Int64(fire.skippedDeadlineCount)
                wellFormed = wellFormed && fire.scheduledDeadline == first + interval * accounted
                accounted += Int64(fire.deadlineCount)
                switch policy {
                case .coalesce: wellFormed = wellFormed && fire.skippedDeadlineCount == 0
                case .skip: wellFormed = wellFormed && fire.deadlineCount == 1
                case .burst: wellFormed = wellFormed && fire.skippedDeadlineCount == 0
                }
            }
            let complete = model.machine.nextDeadline == first + interval * accounted && model.machine.skippedDeadlines == 0
            let counted = model.machine.fireCount == model.fires.count
            failures += model.violations.prefix(5 - failures.count)
            if !(wellFormed && complete && counted) && failures.count < 5 {
                failures.append(
                    "sequence \(sequence) (\(policy), interval \(interval), first \(first)): fires \(model.fires), next deadline \(model.machine.nextDeadline)")
            }
        }
        return failures
    }

    @Test("C5: a burst fires at most maxFires times back to back for the deadlines missed at once, the last one standing for the rest")
    func burstIsBounded() {
        var random = SeededRandom(seed: 7)
        for _ in 0..<10_000 {
            let maxFires = Int.random(in: 1...5, using: &random)
            let interval = Int64.random(in: 1...100, using: &random)
            var model = Model(firstDeadline: interval, interval: interval, policy: .burst(maxFires: maxFires), now: 0, suspended: false)
            let missed = Int64.random(in: 1...50, using: &random)
            model.advance(to: interval * missed, jumping: true)
            #expect(model.fires.count == min(Int(missed), maxFires))
            #expect(model.fires.map(\.deadlineCount).reduce(0, +) == Int(missed))
            #expect(model.fires.allSatisfy { $0.firedAt == interval * missed })
            #expect(model.violations.isEmpty)
        }
    }

    @Test("C6, C7: a one-shot runs exactly once — at its deadline or for fire(), whichever comes first — and is invalid from that run on, out of the store")
    func oneShotRunsOnce() {
        var random = SeededRandom(seed: 11)
        for _ in 0..<10_000 {
            let deadline = Int64.random(in: 0...1_000, using: &random)
            var model = Model(firstDeadline: deadline, interval: 0, policy: .coalesce, now: 0, suspended: Bool.random(using: &random))
            for _ in 0..<10 {
                switch Int.random(in: 0..<4, using: &random) {
                case 0: model.carryOut(model.machine.requestManualFire(isShutDown: false).action)
                case 1: model.carryOut(model.machine.suspend().action)
                case 2: model.carryOut(model.machine.resume(now: model.now, isShutDown: false).action)
                default: model.advance(to: model.now + Int64.random(in: 0...300, using: &random))
                }
                model.checkInvariant("one-shot")
            }
            #expect(model.fires.count <= 1)
            #expect((model.fires.count == 1) == (model.machine.lifecycle == .invalid))
            if let fire = model.fires.first, fire.deadlineCount == 1 { #expect(fire.scheduledDeadline == deadline) }
            #expect(model.violations.isEmpty)
        }
    }

    @Test(
        "C8, C10: invalidate() ends every transition — no fire, resume or reschedule brings the timer back — and a shutdown found by the delivery invalidates it"
    )
    func invalidationIsFinal() {
        var model = Model(firstDeadline: 10, interval: 10, policy: .coalesce, now: 0, suspended: false)
        let invalidated = model.machine.invalidate()
        #expect(invalidated)
        model.carryOut(.remove)
        let again = model.machine.invalidate()
        let fire = model.machine.requestManualFire(isShutDown: false)
        let resume = model.machine.resume(now: 100, isShutDown: false)
        let suspend = model.machine.suspend()
        #expect(!again, "idempotent")
        #expect(fire == (false, .none))
        #expect(resume == (false, .none))
        #expect(suspend == (false, .none))
        model.advance(to: 1_000)
        #expect(model.fires.isEmpty)
        model.checkInvariant("invalid")
        #expect(model.violations.isEmpty)

        var shutDown = Model(firstDeadline: 10, interval: 10, policy: .coalesce, now: 0, suspended: false)
        shutDown.isShutDown = true
        shutDown.isStored = false
        shutDown.machine.takeForDelivery()
        let step = shutDown.machine.nextStep(now: 10, isShutDown: true)
        #expect(step == .invalidated)
        #expect(shutDown.machine.lifecycle == .invalid)
        #expect(!shutDown.machine.isRunning)
    }

    @Test(
        "C9, C10: resume() delivers at once a deadline passed while suspended; reschedule() moves the grid and forgets the missed deadlines; both keep the timer out of the store while suspended"
    )
    func resumeAndReschedule() {
        var model = Model(firstDeadline: 100, interval: 100, policy: .skip, now: 0, suspended: false)
        model.carryOut(model.machine.suspend().action)
        model.advance(to: 350)
        #expect(model.fires.isEmpty)
        model.carryOut(model.machine.resume(now: model.now, isShutDown: false).action)
        // Under skip, the three deadlines missed while suspended fire nothing now; the next reports them.
        #expect(model.fires.isEmpty)
        #expect(model.machine.skippedDeadlines == 3)
        #expect(model.machine.nextDeadline == 400)
        model.checkInvariant("resumed")
        model.carryOut(model.machine.suspend().action)
        let moved = model.machine.reschedule(to: 1_000, interval: 50)
        #expect(moved == .remove)
        #expect(model.machine.skippedDeadlines == 0)
        model.carryOut(.remove)
        model.carryOut(model.machine.resume(now: model.now, isShutDown: false).action)
        model.checkInvariant("rescheduled")
        model.advance(to: 1_100)
        #expect(model.fires.map(\.scheduledDeadline) == [1_000, 1_050, 1_100])
        #expect(model.fires.allSatisfy { $0.skippedDeadlineCount == 0 })
        #expect(model.violations.isEmpty)
    }
}
