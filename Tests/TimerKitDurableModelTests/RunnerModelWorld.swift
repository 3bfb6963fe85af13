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
            case .claimed(let round, let token, let results, let failed):
                transition(index, "claim round \(token) ended") {
                    $0.claimRoundEnded(round, token: token, results: results, failure: failed ? .store(reason: "model") : nil, now: reading)
                }
            case .wrote(let key, let token, let result):
                transition(index, "write of \(key) \(token): \(result)") { $0.writeEnded(key, token: token, result: result, now: reading) }
            case .renewed(let claims, let leaseUntil, let result):
                transition(index, "renewal") { $0.renewalEnded(claims, leaseUntil: leaseUntil, result: result, now: reading) }
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
            case .arm(let key, let instant, let generation): processes[index].wakeUps[key] = .init(at: instant, generation: generation)
            case .disarm(let key): processes[index].wakeUps[key] = nil
            case .claim(let round, let token): call(index, .claim(round, token: token, reading: processes[index].reading(now)))
            case .start(let key, let start): startHandler(index, key, start)
            case .finish(let key, let token, let sequence, let outcome): call(index, .finish(key, token: token, sequence: sequence, outcome: outcome))
            case .retryFinish(let key, let token, let delay): processes[index].timers.append(.init(at: now + delay, timer: .retryFinish(key, token: token)))
            case .release(let key, let token, let sequence, let readyAt): call(index, .release(key, token: token, sequence: sequence, readyAt: readyAt))
            case .cancelHandler(let key, let token):
                guard var handler = processes[index].handlers[key], handler.token == token, !handler.isCancelled else { continue }
                handler.isCancelled = true
                // No random draw here: the machine's actions come in an order of its dictionaries.
                if handler.behavior != .ignoresCancellation { handler.endsAt = now + 10 * ModelSettings.millisecond }
                processes[index].handlers[key] = handler
            case .renew(let claims, let leaseUntil):
                call(index, .renew(claims, reading: processes[index].reading(now), leaseUntil: leaseUntil))
            case .scheduleRenewal(let delay): processes[index].timers.append(.init(at: now + delay, timer: .renewal))
            case .report, .event: break
            case .drained: drained(index)
            }
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
            token: start.token, sequence: start.record.sequence, behavior: behavior, startedAt: now,
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
        calls.append(ModelCall(process: index, kind: kind, at: now + delay, fails: failing, isApplied: failing && Bool.random(using: &random)))
    }

    mutating func apply(_ call: ModelCall) {
        let applies = !call.fails || call.isApplied
        let lease = ModelSettings.lease
        let answer: ModelAnswer
        switch call.kind {
        case .claim(let round, let token, _):
            var results: [StoredKey: Machine.ClaimResult] = [:]
            for entry in round {
                let result = applies ? store.claim(entry.key.string, owner: token, now: call.at, lease: lease, early: entry.isManual) : .failed
                results[entry.key] = call.fails ? .failed : result
                if call.fails, case .claimed = result { unanswered.insert("\(token)|\(entry.key)") }
            }
            answer = .claimed(round, token: token, results: results, failed: call.fails)
        case .finish(let key, let token, let sequence, let outcome):
            let changed = applies && store.finish(key.string, owner: token, sequence: sequence, outcome: outcome)
            if changed { notify(key.string, from: call.process) }
            answer = .wrote(key, token: token, call.fails ? .failed(.store(reason: "model")) : changed ? .applied : .refused)
        case .release(let key, let token, let sequence, let readyAt):
            let changed = applies && store.release(key.string, owner: token, sequence: sequence, readyAt: readyAt)
            if changed { notify(key.string, from: call.process) }
            answer = .wrote(key, token: token, call.fails ? .failed(.store(reason: "model")) : changed ? .applied : .refused)
        case .renew(let claims, _, let leaseUntil):
            // A failed renewal is a fault of its process: enough of them let a lease lapse.
            if call.fails { processes[call.process].faults.append(call.at...call.at) }
            let renewed = applies ? store.renew(claims, now: call.at, lease: lease) : []
            answer = .renewed(claims, leaseUntil: leaseUntil, call.fails ? .failure(.store(reason: "model")) : .success(renewed))
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
                return machine.load(StoredKey(key), readyAt: row.readyAt, handler: "h")
            }
        }
    }

    // MARK: Events

    mutating func startProcess() {
        let process = ModelProcess(id: processes.count)
        _ = process.machine.start()
        process.timers.append(.init(at: now + ModelSettings.horizon / 2, timer: .refill))
        processes.append(process)
        note("p\(process.id) starts")
        refill(processes.count - 1)
    }

    mutating func refill(_ index: Int?) {
        guard let index, processes[index].isAlive else { return }
        let reading = processes[index].reading(now)
        let until = reading + ModelSettings.horizon
        let ready = store.rows.filter { !$0.value.parked && $0.value.readyAt <= until }.map { ($0.key, $0.value.readyAt) }.sorted { $0.0 < $1.0 }
        transition(index, "refill") { machine in
            machine.loaded(until: until)
            return ready.flatMap { machine.load(StoredKey($0.0), readyAt: $0.1) }
        }
    }

    mutating func schedule() {
        keyNumber += 1
        let key = "k\(keyNumber)"
        let interval: Int64? = Int.random(in: 0..<4, using: &random) == 0 ? Int64.random(in: 1_000...8_000, using: &random) * ModelSettings.millisecond : nil
        store.put(key, due: now + Int64.random(in: 0...(3 * ModelSettings.lease), using: &random), interval: interval)
        if interval == nil { oneShots.insert(key) }
        note("schedule \(key)\(interval.map { " every \($0)" } ?? "")")
        notify(key, from: -1)
    }

    mutating func crash() {
        guard let index = anyLiveProcess() else { return }
        end(index, "crashes")
        startProcess()
    }

    /// The process is gone (crashed, or exited): what it held waits for its leases.
    mutating func end(_ index: Int, _ why: String) {
        note("p\(processes[index].id) \(why)")
        processes[index].isAlive = false
        processes[index].faults.append(now...Int64.max)
        processes[index].handlers = [:]
        processes[index].answers = []
        processes[index].timers = []
        processes[index].wakeUps = [:]
    }

    mutating func freeze() {
        guard let index = anyLiveProcess() else { return }
        let until = now + Int64.random(in: (ModelSettings.lease / 2)...(3 * ModelSettings.lease), using: &random)
        processes[index].frozenUntil = max(processes[index].frozenUntil, until)
        processes[index].faults.append(now...until)
        note("p\(processes[index].id) frozen until \(until)")
    }

    mutating func failCalls() {
        guard let index = anyLiveProcess() else { return }
        let until = now + Int64.random(in: (100 * ModelSettings.millisecond)...(3 * ModelSettings.lease), using: &random)
        processes[index].failingUntil = max(processes[index].failingUntil, until)
        processes[index].faults.append(now...until)
        note("p\(processes[index].id) store calls fail until \(until)")
    }

    mutating func slowWrites() {
        guard let index = anyLiveProcess() else { return }
        processes[index].slowWritesUntil = now + Int64.random(in: ModelSettings.lease...(4 * ModelSettings.lease), using: &random)
        note("p\(processes[index].id) writes slow until \(processes[index].slowWritesUntil)")
    }

    mutating func stepClock() {
        guard let index = anyLiveProcess() else { return }
        processes[index].skew += Int64.random(in: -(2 * ModelSettings.lease)...(2 * ModelSettings.lease), using: &random)
        note("p\(processes[index].id) clock off by \(processes[index].skew)")
    }

    mutating func shutdown() {
        guard let index = anyLiveProcess(), !processes[index].isShuttingDown else { return }
        processes[index].isShuttingDown = true
        processes[index].timers.append(.init(at: now + Int64.random(in: 0...(2 * ModelSettings.lease), using: &random), timer: .graceExpired))
        transition(index, "shutdown") { $0.stop() }
        startProcess()
    }

    mutating func cancel() {
        guard let key = store.rows.keys.sorted().randomElement(using: &random) else { return }
        store.rows[key] = nil
        cancelled.insert(key)
        note("cancel \(key)")
        for index in processes.indices where processes[index].isAlive && Bool.random(using: &random) {
            transition(index, "removed: \(key)") { $0.removed(StoredKey(key)) }
        }
    }

    mutating func fireManually() {
        guard let index = anyLiveProcess(), let key = store.rows.keys.sorted().randomElement(using: &random) else { return }
        transition(index, "fire \(key)") { $0.fireManually(StoredKey(key)).actions }
    }

    mutating func drained(_ index: Int) {
        let owner = processes[index].owner + "/"
        for (key, row) in store.rows where row.owner?.hasPrefix(owner) == true && !unanswered.contains("\(row.owner!)|\(key)") {
            if let lease = row.leaseUntil, lease > now {
                violations.append("p\(processes[index].id) drained while \(key) is still claimed by \(row.owner!) until \(lease)")
            }
        }
        end(index, "shut down, drained")
        processes[index].faults.removeLast()  // a clean exit: nothing held
    }

    mutating func anyLiveProcess() -> Int? {
        processes.indices.filter { processes[$0].isAlive && !processes[$0].isShuttingDown }.randomElement(using: &random)
    }

    /// Records an event for a violation's report, when tracing.
    func note(_ event: @autoclosure () -> String) {
        tracer?.lines.append("\(now): \(event())")
    }

    // MARK: Checks

    /// What holds after every transition: slots within bounds, held claims consistent.
    mutating func checkAlways(_ index: Int) {
        let machine = processes[index].machine
        var claiming = 0
        var running = 0
        for occurrence in machine.occurrences.values {
            switch occurrence.phase {
            case .claiming: claiming += 1
            case .running: running += 1
            default: break
            }
        }
        if machine.slotsTaken != claiming + running || machine.slotsTaken > 2 || machine.slotsTaken < 0 {
            violations.append("p\(processes[index].id): \(machine.slotsTaken) slots taken for \(claiming) claiming and \(running) running")
        }
        for key in machine.held {
            switch machine.occurrences[key]?.phase {
            case .running?, .completing?: break
            default: violations.append("p\(processes[index].id) holds \(key) in phase \(String(describing: machine.occurrences[key]?.phase))")
            }
        }
    }

    /// Nothing is in flight but the work of repeating timers: no call, handler or occurrence of a
    /// one-shot past `armed`.
    var isQuiet: Bool {
        let repeating = Set(store.rows.filter { $0.value.interval != nil }.keys)
        return calls.allSatisfy { call in
            switch call.kind {
            case .claim(let round, _, _): round.allSatisfy { repeating.contains($0.key.string) }
            case .finish(let key, _, _, _), .release(let key, _, _, _): repeating.contains(key.string)
            case .renew: true
            }
        }
            && processes.allSatisfy { process in
                !process.isAlive
                    || process.machine.occurrences.allSatisfy { key, occurrence in
                        if case .armed = occurrence.phase { return true }
                        return repeating.contains(key.string)
                    }
            }
    }

    /// After healing and a long quiet: every timer ran, was parked or cancelled; nothing is stuck.
    mutating func checkEventually(repeatingAtStart: [String: Int64]) {
        for (key, row) in store.rows where !row.parked {
            if row.interval == nil {
                violations.append("one-shot \(key) is still pending after the quiet (ready at \(row.readyAt), owner \(row.owner ?? "none"))")
            } else if let sequence = repeatingAtStart[key], sequence == row.sequence, row.owner == nil,
                row.readyAt < now - ModelSettings.horizon / 2 - 2 * ModelSettings.lease,
                !processes.contains(where: { $0.isAlive && $0.machine.occurrences[StoredKey(key)] != nil })
            {
                // Ready for longer than a refill period (and a lease) during the quiet, not run, and
                // forgotten: no live process has it armed, or waiting for a handler slot.
                violations.append("repeating \(key) did not fire during the quiet: ready at \(row.readyAt)")
            }
        }
        for key in oneShots where store.rows[key] == nil && !cancelled.contains(key) && !completedKeys.contains(key) {
            violations.append("one-shot \(key) is gone without a run that returned")
        }
        for process in processes where process.isAlive {
            let machine = process.machine
            let callsInFlight = calls.contains { $0.process == process.id } || !process.answers.isEmpty
            for (key, occurrence) in machine.occurrences {
                let stuck: Bool
                switch occurrence.phase {
                case .armed: stuck = false
                case .queued: stuck = machine.slotsTaken < 2 && !machine.isClaimRoundInFlight
                case .claiming: stuck = !callsInFlight
                case .running: stuck = process.handlers[key] == nil
                case .completing, .releasing:
                    stuck = !callsInFlight && !process.timers.contains { if case .retryFinish(key, _) = $0.timer { true } else { false } }
                }
                if stuck { violations.append("p\(process.id) is stuck with \(key) in phase \(occurrence.phase) after the quiet") }
            }
        }
    }
}
