import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import TimerKit
import TimerKitTesting

/// `timerkit demo`: walks through TimerKit's features in real time, checking each claim as it goes.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Walk through TimerKit's features in real time (about 6 seconds), checking each claim.")

    @Flag(name: .shortAndLong, help: "Print every fire, not just the summaries.")
    var verbose = false

    mutating func run() async throws {
        let report = DemoReport(verbose: verbose)
        print("TimerKit demo — every step checks what it claims (✓) or says what went wrong (✗).\n")
        try await repeatingWithoutDrift(report)
        try await oneShot(report)
        try await ownerBound(report)
        try await droppedHandle(report)
        try await suspendAndResume(report)
        try missedDeadlinePolicies(report)
        try await busyThread(report)
        try await asyncSequence(report)
        try await mainActorDelivery(report)
        badInput(report)
        try await engineAtScale(report)
        try await timeouts(report)
        try countdown(report)
        try registry(report)
        try await frameClock(report)
        print("\n\(report.passed) checks passed, \(report.failed) failed")
        if report.failed > 0 { throw ExitCode.failure }
    }

    func repeatingWithoutDrift(_ report: DemoReport) async throws {
        report.section("1. A repeating timer keeps its grid (C4): the k-th deadline is first + k·interval")
        let fires = Collected<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .milliseconds(100)) { _, fire in fires.append(fire) }
        guard let first = timer.nextDeadline else { throw ExitCode.failure }
        try await Task.sleep(for: .milliseconds(560))
        timer.invalidate()
        for fire in fires.values { report.detail("fire #\(fire.sequenceNumber): \(ms(fire.lateness)) late") }
        // A fire that stands for several deadlines (on a loaded machine) moves k on by all of them.
        var k = 0
        var onGrid = true
        for fire in fires.values {
            onGrid = onGrid && fire.scheduledDeadline == first + .milliseconds(100) * k
            k += fire.deadlineCount
        }
        report.check(
            fires.values.count >= 4 && onGrid,
            "\(fires.values.count) fires, every one on the grid; worst lateness \(ms(fires.values.map(\.lateness).max() ?? .zero))")
    }

    func oneShot(_ report: DemoReport) async throws {
        report.section("2. A one-shot fires once and is already invalid inside its handler (C6)")
        let validInside = Collected<Bool>()
        let timer = try ScheduledTimer.once(at: .after(.milliseconds(50))) { timer, _ in validInside.append(timer.isValid) }
        await until { !validInside.values.isEmpty }
        report.check(
            validInside.values == [false] && !timer.isValid,
            "fired \(validInside.values.count) time(s); isValid inside the handler: \(validInside.values.first.map(String.init) ?? "-")")
    }

    func ownerBound(_ report: DemoReport) async throws {
        report.section("3. An owner keeps its timer in a property and still deinitializes at once (C11)")
        let deinits = Counted()
        var screen: Screen? = try Screen(deinits: deinits)
        await until { (screen?.ticks.value ?? 0) >= 3 }
        let ticks = screen?.ticks.value ?? 0
        let timer = screen?.timer
        screen = nil
        report.check(deinits.value == 1, "the screen ticked \(ticks) times; its deinit ran as soon as the last reference went, no invalidate() needed")
        await until { timer?.isValid == false }
        report.check(timer?.isValid == false, "at its next deadline the timer found its owner gone and ended itself")
    }

    func droppedHandle(_ report: DemoReport) async throws {
        report.section("4. Dropping the handle never silently stops a timer (C12)")
        let fired = Counted()
        _ = try ScheduledTimer.once(at: .after(.milliseconds(30))) { _, _ in fired.increment() }
        await until { fired.value == 1 }
        report.check(fired.value == 1, "a timer whose handle was dropped at once still fired")
    }

    func suspendAndResume(_ report: DemoReport) async throws {
        report.section("5. Suspend and resume are idempotent; missed deadlines are coalesced and counted (C5, C9)")
        let fires = Collected<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .milliseconds(50)) { _, fire in fires.append(fire) }
        await until { fires.values.count >= 2 }
        timer.suspend()
        timer.suspend()
        let beforeResume = fires.values.count
        try await Task.sleep(for: .milliseconds(330))
        timer.resume()
        await until { fires.values.count > beforeResume }
        timer.invalidate()
        let coalesced = fires.values.dropFirst(beforeResume).first
        report.check(
            (coalesced?.deadlineCount ?? 0) >= 5,
            "suspended twice, resumed once: the timer runs again; its first fire stands for \(coalesced?.deadlineCount ?? 0) missed deadlines")
    }

    func missedDeadlinePolicies(_ report: DemoReport) throws {
        report.section("6. Missed-deadline policies, on the virtual clock (exact, no sleeping) (C5)")
        report.note("A 1 s timer, then 5.5 s in which nothing could run (a machine asleep): clock.jump(by:).")
        for policy in [MissedDeadlinePolicy.coalesce, .skip, .burst(maxFires: 3)] {
            let clock = VirtualClock()
            let fires = Collected<TimerFire>()
            let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock, missedDeadlines: policy) { _, fire in fires.append(fire) }
            clock.jump(by: .milliseconds(5_500))
            let described = fires.values.map { fire in
                "deadline \(fire.scheduledDeadline) standing for \(fire.deadlineCount)"
                    + (fire.skippedDeadlineCount > 0 ? " after \(fire.skippedDeadlineCount) skipped" : "")
            }
            let expected: [(Int, Int)] =
                switch policy {
                case .coalesce: [(5, 0)]
                case .skip: [(1, 4)]
                case .burst: [(1, 0), (1, 0), (3, 0)]
                }
            let counts = fires.values.map { ($0.deadlineCount, $0.skippedDeadlineCount) }
            report.check(
                counts.elementsEqual(expected, by: ==),
                "\(policy): \(described.joined(separator: "; ")); next deadline \(timer.nextDeadline.map { "\($0)" } ?? "-")")
        }
    }

    func busyThread(_ report: DemoReport) async throws {
        report.section("7. A blocked thread delays only the timers delivered to it (C15)")
        let free = Collected<TimerFire>()
        let blocked = Collected<TimerFire>()
        let blockedQueue = DispatchQueue(label: "blocked")
        let freeTimer = try ScheduledTimer.repeating(every: .milliseconds(100), delivery: .queue(DispatchQueue(label: "free"))) { _, fire in free.append(fire) }
        let blockedTimer = try ScheduledTimer.repeating(every: .milliseconds(100), delivery: .queue(blockedQueue)) { _, fire in blocked.append(fire) }
        let busy = Collected<TimerInstant>()
        blockedQueue.async {
            busy.append(TimerClock.continuous.now)
            let end = ContinuousClock.now + .milliseconds(350)
            while ContinuousClock.now < end {}
            busy.append(TimerClock.continuous.now)
        }
        try await Task.sleep(for: .milliseconds(820))
        await until { busy.values.count == 2 }
        await freeTimer.invalidateAndWait()
        await blockedTimer.invalidateAndWait()
        let (start, end) = (busy.values.first!, busy.values.last!)
        let freeDuring = free.values.filter { $0.firedAt > start && $0.firedAt < end }.count
        let blockedDuring = blocked.values.filter { $0.firedAt > start + .milliseconds(100) && $0.firedAt < end }.count
        report.check(freeDuring >= 2, "while one queue spun for 350 ms, a timer on another queue went on firing on its grid")
        report.check(
            blockedDuring == 0 && blocked.values.contains { $0.deadlineCount > 1 },
            "the timer on the blocked queue waited, then one fire stood for the deadlines it missed")
    }

    func asyncSequence(_ report: DemoReport) async throws {
        report.section("8. Fires as an AsyncSequence (C15)")
        var numbers: [Int] = []
        for await fire in try ScheduledTimer.fires(every: .milliseconds(40)) {
            numbers.append(fire.sequenceNumber)
            if numbers.count == 3 { break }
        }
        report.check(numbers.count == 3, "for await received fires \(numbers); leaving the loop invalidated the timer")
    }

    func mainActorDelivery(_ report: DemoReport) async throws {
        report.section("9. A @MainActor handler, with no run loop (C15)")
        let ticks = try await MainActorTicker.run()
        report.check(ticks >= 3, "the main-actor handler ran \(ticks) times")
    }

    func badInput(_ report: DemoReport) {
        report.section("10. Bad input gets a clear error, never a crash or a silent wrong time (C17)")
        do {
            try ScheduledTimer.repeating(every: .zero) { _, _ in }
            report.check(false, "a zero interval was accepted")
        } catch {
            report.check(true, "every: .zero → \(error)")
        }
        do {
            _ = try Duration.validatedSeconds(.nan)
            report.check(false, "NaN seconds were accepted")
        } catch {
            report.check(true, "validatedSeconds(.nan) → \(error)")
        }
    }

    func engineAtScale(_ report: DemoReport) async throws {
        report.section("11. One engine per clock, no kernel object per timer (C16)")
        let clock = TimerClock.dedicated(.continuous)
        defer { clock.shutdown() }
        let count = 100_000
        let fired = Counted()
        let start = ContinuousClock.now
        var timers: [ScheduledTimer] = []
        timers.reserveCapacity(count)
        for _ in 0..<count {
            timers.append(try ScheduledTimer.once(at: .after(.seconds(3600)), clock: clock) { _, _ in fired.increment() })
        }
        let scheduled = ContinuousClock.now - start
        let pending = clock.pendingTimerCount
        for timer in timers[..<(count / 2)] { timer.invalidate() }
        for (index, timer) in timers[(count / 2)...].enumerated() {
            try timer.reschedule(at: .after(.milliseconds(100 + Int64(index % 300))))
        }
        await until(timeout: .seconds(30)) { fired.value == count / 2 }
        report.check(
            pending == count && fired.value == count / 2,
            "scheduled \(count) timers in \(ms(scheduled)), cancelled half, moved the rest to the next 0.4 s: \(fired.value) fires in \(clock.wakeUpCount) wake-ups of one thread"
        )
    }

    func timeouts(_ report: DemoReport) async throws {
        report.section("12. Timeouts as callbacks: no object per timer, O(1) to schedule and cancel (C8, C16)")
        let clock = TimerClock.dedicated(.continuous)
        defer { clock.shutdown() }
        let count = 200_000
        let ran = Counted()
        let cancelledRan = Counted()
        let start = ContinuousClock.now
        var timeouts: [ScheduledCallback] = []
        timeouts.reserveCapacity(count)
        for _ in 0..<count {
            timeouts.append(try clock.schedule(at: .after(.seconds(30))) { cancelledRan.increment() })
        }
        for index in 0..<1_000 {
            try clock.schedule(at: .after(.milliseconds(100 + Int64(index % 300)))) { ran.increment() }
        }
        let cancelled = timeouts.filter { $0.cancel() }.count
        let elapsed = ContinuousClock.now - start
        await until(timeout: .seconds(10)) { ran.value == 1_000 }
        report.check(
            cancelled == count && ran.value == 1_000 && cancelledRan.value == 0 && clock.pendingTimerCount == 0,
            "scheduled \(count) 30 s timeouts and cancelled them all in \(ms(elapsed)) (a debug build); the 1000 callbacks left ran, the cancelled ones never did"
        )
    }
}

extension Demo {
    func countdown(_ report: DemoReport) throws {
        report.section("13. A countdown shows deadline − now, never a count of ticks (virtual clock, exact)")
        let clock = VirtualClock()
        let ticks = Collected<Countdown.Tick>()
        let countdown = try Countdown.start(to: .after(.seconds(3)), clock: clock.clock) { _, tick in ticks.append(tick) }
        clock.advance(by: .seconds(5))
        let shown = ticks.values.map { "\($0.value) at \($0.instant)" }.joined(separator: ", ")
        report.check(
            ticks.values.map(\.value) == [3, 2, 1, 0] && ticks.values.filter(\.isFinished).count == 1,
            "a 3 s countdown: \(shown); the final tick once")
        let paused = Collected<Countdown.Tick>()
        let sixty = try Countdown.start(to: .after(.seconds(60)), clock: clock.clock) { _, tick in paused.append(tick) }
        clock.advance(by: .milliseconds(18_700))
        sixty.pause()
        clock.advance(by: .seconds(100))
        sixty.resume()
        clock.advance(by: .milliseconds(300))
        let resumed = paused.values.last
        report.check(
            resumed?.value == 41 && resumed?.remaining == .seconds(41),
            "paused at 41.3 s remaining, resumed 100 s later: the next tick came 0.3 s after the resume, showing 41")
        countdown.cancel()
        sixty.cancel()
    }

    func registry(_ report: DemoReport) throws {
        report.section("14. Keyed timers: LCTimer's registry, done right (virtual clock, exact)")
        let clock = VirtualClock()
        let timers = TimerRegistry<String>(clock: clock.clock)
        let runs = Collected<String>()
        try timers.schedule("sms", at: .after(.seconds(60))) { _, _ in runs.append("first") }
        try timers.schedule("sms", at: .after(.seconds(60))) { _, _ in runs.append("replacement") }
        clock.advance(by: .seconds(59))
        try timers.reschedule("sms", at: .after(.seconds(60)))
        clock.advance(by: .seconds(61))
        report.check(
            runs.values == ["replacement"] && timers.count == 0,
            "replaced under the same key, moved in place: ran once, as \(runs.values.first ?? "-"), and its key is free again")
        try timers.schedule("poll", at: .after(.seconds(1)), every: .seconds(1)) { _, _ in }
        report.check(
            timers.cancel("poll") == .cancelled && timers.cancel("poll") == .notFound,
            "cancel says what it found: .cancelled, then .notFound")
    }

    func frameClock(_ report: DemoReport) async throws {
        report.section("15. A frame clock: CADisplayLink without the retain cycle (C11)")
        let frames = Collected<FrameClock.Frame>()
        var view: FrameView? = FrameView()
        weak var weakView: FrameView?
        weakView = view
        let clock = try FrameClock.start(
            framesPerSecond: 60,
            .bound(to: view!) { view, _, frame in
                view.frames.increment()
                frames.append(frame)
            })
        try await Task.sleep(for: .milliseconds(500))
        view = nil
        await until { !clock.isValid }
        let all = frames.values
        let accounted = zip(all, all.dropFirst()).allSatisfy { $1.index == $0.index + 1 + Int64($1.droppedSinceLast) }
        report.check(
            all.count >= 10 && accounted && all.allSatisfy { $0.deliveredAt >= $0.timestamp },
            "60 Hz for half a second: every frame on its grid, delivered or counted as dropped, none early")
        report.check(weakView == nil && !clock.isValid, "the view deinitialized as soon as its last reference went; the frame clock ended itself")
    }
}

/// Polls until `condition` holds or `timeout` passes: the demo's checks hold on a loaded machine.
func until(timeout: Duration = .seconds(5), _ condition: () -> Bool) async {
    let end = ContinuousClock.now + timeout
    while !condition() && ContinuousClock.now < end {
        try? await Task.sleep(for: .milliseconds(5))
    }
}
