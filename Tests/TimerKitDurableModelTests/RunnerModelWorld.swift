import Foundation
import TimerKitTesting

@testable import TimerKitDurable

/// One random run of the model: processes, the store, the calls in flight, the faults — and what
/// must hold after every event (`violations` collects what did not).
struct ModelWorld {
    var random: SeededRandom
    var now: Int64 = 0
    var store = ModelStore()
    var processes: [ModelProcess] = []
    var calls: [ModelCall] = []
    var violations: [String] = []
    /// Keys ever scheduled, and how each one-shot ended.
    var oneShots: Set<String> = []
    var cancelled: Set<String> = []
    /// Occurrences whose handler returned: `key#sequence` → where, and when that run started.
    var returned: [String: (process: Int, startedAt: Int64)] = [:]
    var completedKeys: Set<String> = []
    /// Claims applied whose answer was lost (`token|key`): held until their lease ends.
    var unanswered: Set<String> = []
    /// The events, for a violation's report (kept only when tracing: a failing seed is run again
    /// with it).
    let tracer: Tracer?
    var trace: [String] { tracer?.lines ?? [] }

    final class Tracer {
        var lines: [String] = []
    }
    var events = 0
    var starts = 0
    var keyNumber = 0

    init(seed: UInt64, tracing: Bool = false) {
        random = SeededRandom(seed: seed)
        tracer = tracing ? Tracer() : nil
        for _ in 0..<Int.random(in: 1...3, using: &random) { schedule() }
        for _ in 0..<Int.random(in: 1...3, using: &random) { startProcess() }
    }

    // MARK: Running

    /// Runs `count` random events, then heals every fault and lets the world run until everything
    /// due has happened.
    mutating func run(events count: Int) {
        for _ in 0..<count where violations.isEmpty { randomEvent() }
        guard violations.isEmpty else { return }
        heal()
    }

    mutating func randomEvent() {
        events += 1
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<55: advance(to: now + Int64.random(in: 1...(ModelSettings.lease / 4), using: &random))
        case 55..<60: crash()
        case 60..<65: freeze()
        case 65..<70: failCalls()
        case 70..<72: stepClock()
        case 72..<74: slowWrites()
        case 74..<78: shutdown()
        case 78..<84: cancel()
        case 84..<92: schedule()
        case 92..<96: fireManually()
        default: refill(anyLiveProcess())
        }
        settle()
    }

    /// Ends every fault, then runs until nothing is due for long enough that every timer must
    /// have run, been parked, or been cancelled; checks that.
    mutating func heal() {
        for index in processes.indices where processes[index].isAlive {
            processes[index].frozenUntil = min(processes[index].frozenUntil, now)
            processes[index].failingUntil = min(processes[index].failingUntil, now)
            // The clock is right again (a fleet's instances measure their offset to the
            // database's): ready times written on a skewed clock are due by the store's.
            processes[index].skew = 0
        }
        if !processes.contains(where: { $0.isAlive && !$0.isShuttingDown }) { startProcess() }
        let repeatingAtStart = store.rows.filter { !$0.value.parked && $0.value.interval != nil }.mapValues(\.sequence)
        // Long enough for a repeating timer to fire (a refill finds what no process knows), and
        // then until no one-shot is left — at most 100 leases.
        let minimum = now + (repeatingAtStart.isEmpty ? 0 : 6 * ModelSettings.lease)
        let cap = now + 100 * ModelSettings.lease
        settle()
        while violations.isEmpty, let next = nextEventTime(), next <= cap {
            if now >= minimum && !store.rows.values.contains(where: { !$0.parked && $0.interval == nil }) && isQuiet { break }
            advance(to: next)
        }
        // Let the calls in flight land (a claim of a process whose clock runs ahead may be).
        for _ in 0..<20 {
            guard violations.isEmpty, let next = calls.map(\.at).min() else { break }
            advance(to: next)
        }
        checkEventually(repeatingAtStart: repeatingAtStart)
    }

    mutating func advance(to instant: Int64) {
        var steps = 0
        while violations.isEmpty, let next = nextEventTime(), next <= instant {
            now = max(now, next)
            settle()
            steps += 1
            if steps > 100_000 {
                violations.append("no progress at \(now): something spins")
                return
            }
        }
        now = max(now, instant)
        settle()
    }

    /// The next time something is due, in true time.
    func nextEventTime() -> Int64? {
        var next: Int64?
        func consider(_ time: Int64) { next = min(next ?? time, time) }
        for call in calls { consider(call.at) }
        for process in processes where process.isAlive {
            // A frozen process does nothing until it thaws.
            if process.isFrozen(now) {
                consider(process.frozenUntil)
                continue
            }
            if !process.answers.isEmpty { consider(now) }
            for timer in process.timers { consider(timer.at) }
            for wakeUp in process.wakeUps.values { consider(wakeUp.at - process.skew) }
            for handler in process.handlers.values {
                if handler.behavior != .hangs || handler.isCancelled { consider(handler.endsAt) }
                if !handler.isCancelled { consider(handler.timeoutAt) }
            }
        }
        return next.map { max($0, now) }
    }

    /// Carries out everything due now, until nothing is.
    mutating func settle() {
        var rounds = 0
        while violations.isEmpty, rounds < 1_000 {
            rounds += 1
            var progress = false
            // The wake-up actions that waited, now, in the order they came.
            for index in processes.indices where !processes[index].deferredWakeUps.isEmpty {
                let deferred = processes[index].deferredWakeUps
                processes[index].deferredWakeUps = []
                guard processes[index].isAlive else { continue }
                for action in deferred { applyWakeUp(action, index) }
                checkAlways(index)
                progress = true
            }
            // Store calls due, in order.
            while let position = calls.indices.filter({ calls[$0].at <= now }).min(by: { calls[$0].at < calls[$1].at }) {
                let call = calls.remove(at: position)
                apply(call)
                progress = true
            }
            for index in processes.indices where processes[index].isAlive && !processes[index].isFrozen(now) {
                progress = serve(index) || progress
            }
            if !progress { return }
        }
        if rounds >= 1_000 { violations.append("the world did not settle at \(now): something spins") }
    }

    /// Delivers what is due to a process; whether anything was.
    mutating func serve(_ index: Int) -> Bool {
        var progress = false
        let reading = processes[index].reading(now)
        while !processes[index].answers.isEmpty, processes[index].isAlive {
            let answer = processes[index].answers.removeFirst()
            progress = true
            switch answer {
            case .claimed(let round, let token, let results, let failed, let sentAt):
                let elapsed = now - sentAt
                transition(index, "claim round \(token) ended") {
                    $0.claimRoundEnded(round, token: token, results: results, failure: failed ? .store(reason: "model") : nil, now: reading, elapsed: elapsed)
                }
            case .swept(let limit, let token, let result, let sentAt):
                let elapsed = now - sentAt
                transition(index, "sweep \(token) ended") { $0.sweepEnded(limit: limit, token: token, result: result, now: reading, elapsed: elapsed) }
            case .wrote(let key, let token, let result):
                transition(index, "write of \(key) \(token): \(result)") { $0.writeEnded(key, token: token, result: result, now: reading) }
            case .renewed(let claims, let result):
                transition(index, "renewal") { $0.renewalEnded(claims, result: result, now: reading) }
            }
        }
        while processes[index].isAlive, let position = processes[index].timers.firstIndex(where: { $0.at <= now }) {
            let timer = processes[index].timers.remove(at: position).timer
            progress = true
            switch timer {
            case .renewal: transition(index, "renewal tick") { $0.renewalDue(now: reading) }
            case .retryFinish(let key, let token): transition(index, "retry the end of \(key)") { $0.retryFinishDue(key, token: token) }
            case .refill:
                refill(index)
                processes[index].timers.append(.init(at: now + ModelSettings.horizon / 2, timer: .refill))
            case .sweepTick: transition(index, "sweep tick") { $0.sweepTickDue() }
            case .backlogCheck: transition(index, "backlog check") { $0.backlogMayWait() }
            case .leaseCheck(let instant): transition(index, "lease check") { $0.leaseCheckDue(at: instant) }
            case .graceExpired:
                transition(index, "grace period over") { $0.graceExpired() }
                if processes[index].isAlive, processes[index].machine.lifecycle != .stopped {
                    // shutdown returned with runs still under way: the process exits.
                    processes[index].hasExited = true
                    end(index, "exited after its grace period")
                }
            }
        }
        // Dictionaries iterate in an order that differs from run to run: the earliest (then the
        // smallest key) goes first, so that a seed replays exactly.
        while processes[index].isAlive,
            let (key, wakeUp) = processes[index].wakeUps.filter({ $0.value.at <= reading }).min(by: {
                ($0.value.at, $0.key.string) < ($1.value.at, $1.key.string)
            })
        {
            processes[index].wakeUps[key] = nil
            progress = true
            transition(index, "wake-up \(key)") { $0.wokeUp(key, generation: wakeUp.generation) }
        }
        while processes[index].isAlive,
            let (key, handler) = processes[index].handlers.filter({ ($0.value.behavior != .hangs || $0.value.isCancelled) && $0.value.endsAt <= now })
                .min(by: { ($0.value.endsAt, $0.key.string) < ($1.value.endsAt, $1.key.string) })
        {
            processes[index].handlers[key] = nil
            progress = true
            let result: Machine.HandlerResult
            switch (handler.behavior, handler.isCancelled) {
            case (.ignoresCancellation, _), (.returns, false): result = .returned
            case (.throws, false): result = .threw("the handler failed")
            default: result = .threw("CancellationError()")
            }
            if result == .returned {
                returned["\(key)#\(handler.sequence)"] = (processes[index].id, handler.startedAt)
                completedKeys.insert(key.string)
            }
            transition(index, "handler of \(key) ended: \(result)") {
                $0.handlerEnded(key, token: handler.token, result: result, duration: .zero, now: reading)
            }
        }
        while processes[index].isAlive,
            let (key, handler) = processes[index].handlers.filter({ !$0.value.isCancelled && $0.value.timeoutAt <= now })
                .min(by: { ($0.value.timeoutAt, $0.key.string) < ($1.value.timeoutAt, $1.key.string) })
        {
            progress = true
            processes[index].handlers[key]!.timeoutAt = .max
            transition(index, "timeout of \(key)") { $0.timedOut(key, token: handler.token, description: "model") }
        }
        return progress
    }

    /// A transition of process `index`'s machine, then its actions.
    mutating func transition(_ index: Int, _ event: @autoclosure () -> String, _ body: (inout Machine) -> [Machine.Action]) {
        note("p\(processes[index].id) \(event())")
        let actions = body(&processes[index].machine)
        if tracer != nil, !actions.isEmpty {
            note("  → " + actions.map { "\($0)".replacingOccurrences(of: "TimerKitDurable.", with: "").prefix(140) }.joined(separator: " | "))
        }
        perform(actions, index)
        checkAlways(index)
    }

    // MARK: Actions

    mutating func perform(_ actions: [Machine.Action], _ index: Int) {
        for action in actions {
            guard processes[index].isAlive else { return }
            switch action {
            case .arm, .disarm:
                // A quarter of them wait until the world settles, after the actions that follow.
                if Int.random(in: 0..<4, using: &random) == 0 {
                    processes[index].deferredWakeUps.append(action)
                } else {
                    applyWakeUp(action, index)
                }
            case .claim(let round, let token): call(index, .claim(round, token: token, reading: processes[index].reading(now)))
            case .sweep(let limit, let token, let excluding, let skipping):
                call(index, .sweep(limit: limit, token: token, excluding: excluding, skipping: skipping, reading: processes[index].reading(now)))
            case .scheduleSweepTick(let delay): processes[index].timers.append(.init(at: now + delay, timer: .sweepTick))
            case .scheduleBacklogCheck(let delay): processes[index].timers.append(.init(at: now + delay, timer: .backlogCheck))
            // An instant of the store's clock, read on the process's (its skew).
            case .scheduleLeaseCheck(let instant):
                processes[index].timers.append(.init(at: max(now, instant - processes[index].skew), timer: .leaseCheck(instant)))
            case .start(let key, let start): startHandler(index, key, start)
            case .finish(let key, let token, let sequence, let outcome, _): call(index, .finish(key, token: token, sequence: sequence, outcome: outcome))
            case .retryFinish(let key, let token, let delay): processes[index].timers.append(.init(at: now + delay, timer: .retryFinish(key, token: token)))
            case .release(let key, let token, let sequence, let readyAt): call(index, .release(key, token: token, sequence: sequence, readyAt: readyAt))
            case .cancelHandler(let key, let token):
                guard var handler = processes[index].handlers[key], handler.token == token, !handler.isCancelled else { continue }
                handler.isCancelled = true
                // No random draw here: the machine's actions come in an order of its dictionaries.
                if handler.behavior != .ignoresCancellation { handler.endsAt = now + 10 * ModelSettings.millisecond }
                processes[index].handlers[key] = handler
            case .renew(let claims): call(index, .renew(claims, reading: processes[index].reading(now)))
            case .scheduleRenewal(let delay): processes[index].timers.append(.init(at: now + delay, timer: .renewal))
            // An event the machine's state rules out is a defect (a debug build stops at it).
            case .report(.store(let reason)) where reason.hasPrefix(Machine.ruledOut): violations.append(reason)
            case .report, .event: break
            case .drained: drained(index)
            }
        }
    }

    /// An arm or a disarm, as the runner's shell carries it out: an arm only if the machine still
    /// holds its generation, a disarm only of the wake-up armed for its own.
    mutating func applyWakeUp(_ action: Machine.Action, _ index: Int) {
        switch action {
        case .arm(let key, let instant, let generation):
            guard case .armed(_, generation)? = processes[index].machine.occurrences[key]?.phase else { return }
            processes[index].wakeUps[key] = .init(at: instant, generation: generation)
        case .disarm(let key, let generation):
            if let armed = processes[index].wakeUps[key], armed.generation <= generation { processes[index].wakeUps[key] = nil }
        default:
            break
        }
    }

    mutating func startHandler(_ index: Int, _ key: StoredKey, _ start: Machine.Start) {
        starts += 1
        let process = processes[index]
        let occurrence = "\(key)#\(start.record.sequence)"
        note("p\(process.id) starts \(occurrence), attempt \(start.record.attempts)")
        if process.handlers[key] != nil {
            violations.append("p\(process.id) started \(key) while its handler was running there")
        }
        let limited = ModelSettings.limitedHandler
        if start.record.handler == limited, process.handlers.values.contains(where: { $0.handler == limited }) {
            violations.append("p\(process.id) started \(occurrence) of \(limited) while another run of it was under way there, over its limit of 1")
        }
        if start.record.attempts > ModelSettings.maxAttempts {
            violations.append("p\(process.id) started \(occurrence) at attempt \(start.record.attempts), past maxAttempts")
        }
        // A run that returned may run again only if its process was faulty while it held the
        // claim (crashed, froze, exited, or its renewals failed): its lease could lapse.
        // (Or if this process was faulty meanwhile: a claim it made before a freeze.)
        if let earlier = returned[occurrence], !processes[earlier.process].wasFaulty(during: earlier.startedAt...now),
            !process.wasFaulty(during: earlier.startedAt...now)
        {
            violations.append(
                "\(occurrence) ran again on p\(process.id) after its handler, started at \(earlier.startedAt), returned on p\(processes[earlier.process].id), which was never faulty since"
            )
        }
        let behavior = ModelHandler.Behavior.allCases.randomElement(using: &random)!
        processes[index].handlers[key] = ModelHandler(
            token: start.token, sequence: start.record.sequence, handler: start.record.handler, behavior: behavior, startedAt: now,
            endsAt: now + Int64.random(in: 0...(Bool.random(using: &random) ? ModelSettings.lease / 3 : 2 * ModelSettings.lease), using: &random),
            timeoutAt: now + ModelSettings.handlerTimeout)
    }

    /// A store call, applied after a prompt delay — or failing, while the process's calls fail, and
    /// now and then anyway.
    mutating func call(_ index: Int, _ kind: ModelCall.Kind) {
        let failing = now < processes[index].failingUntil || Int.random(in: 0..<40, using: &random) == 0
        var delay = Int64.random(in: 0...ModelSettings.maximumCallDelay, using: &random)
        switch kind {
        case .finish where now < processes[index].slowWritesUntil, .release where now < processes[index].slowWritesUntil:
            delay += Int64.random(in: 0...(3 * ModelSettings.lease), using: &random)
        default: break
        }
        calls.append(ModelCall(process: index, kind: kind, sentAt: now, at: now + delay, fails: failing, isApplied: failing && Bool.random(using: &random)))
    }

    mutating func apply(_ call: ModelCall) {
        let applies = !call.fails || call.isApplied
        let answer: ModelAnswer
        switch call.kind {
        case .claim(let round, let token, _):
            var results: [StoredKey: Machine.ClaimResult] = [:]
            for entry in round {
                let result = applies ? store.claim(entry.key.string, owner: token, now: call.at, lease: entry.lease, early: entry.isManual) : .failed
                results[entry.key] = call.fails ? .failed : result
                if call.fails, case .claimed = result { unanswered.insert("\(token)|\(entry.key)") }
            }
            answer = .claimed(round, token: token, results: results, failed: call.fails, sentAt: call.sentAt)
        case .sweep(let limit, let token, let excluding, let skipping, _):
            let swept =
                applies ? store.sweep(owner: token, excluding: excluding, skipping: skipping, now: call.at, lease: ModelSettings.lease, limit: limit) : []
            if call.fails { for record in swept { unanswered.insert("\(token)|\(record.key)") } }
            answer = .swept(limit: limit, token: token, call.fails ? .failure(.store(reason: "model")) : .success(swept), sentAt: call.sentAt)
        case .finish(let key, let token, let sequence, let outcome):
            let changed = applies && store.finish(key.string, owner: token, sequence: sequence, outcome: outcome)
            if changed { notify(key.string, from: call.process) }
            answer = .wrote(key, token: token, call.fails ? .failed(.store(reason: "model")) : changed ? .applied : .refused)
        case .release(let key, let token, let sequence, let readyAt):
            let changed = applies && store.release(key.string, owner: token, sequence: sequence, readyAt: readyAt)
            if changed { notify(key.string, from: call.process) }
            answer = .wrote(key, token: token, call.fails ? .failed(.store(reason: "model")) : changed ? .applied : .refused)
        case .renew(let claims, let reading):
            // A failed renewal is a fault of its process: enough of them let a lease lapse.
            if call.fails { processes[call.process].faults.append(call.at...call.at) }
            let renewed = applies ? store.renew(claims, now: call.at, reading: reading) : []
            answer = .renewed(claims, call.fails ? .failure(.store(reason: "model")) : .success(renewed))
        }
        if processes[call.process].isAlive { processes[call.process].answers.append(answer) }
    }

    /// Tells other live processes of a row's new ready time, as a notification that may be lost.
    mutating func notify(_ key: String, from origin: Int) {
        guard let row = store.rows[key], !row.parked else { return }
        for index in processes.indices where index != origin && processes[index].isAlive && !processes[index].isFrozen(now) && Bool.random(using: &random) {
            let reading = processes[index].reading(now)
            transition(index, "notice: \(key) ready at \(row.readyAt)") { machine in
                machine.loaded(until: reading + ModelSettings.horizon)
                return machine.load(StoredKey(key), readyAt: row.readyAt, handler: row.handler)
            }
        }
    }
}
