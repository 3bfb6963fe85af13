import Foundation
import TimerKitTesting

@testable import TimerKitDurable

// The model's events: what happens to processes, timers and the store between transitions.

extension ModelWorld {
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
        // As the runner loads: from a second back; older rows are the sweep's.
        let from = reading - ModelSettings.recentlyDue
        let ready = store.rows.filter { !$0.value.parked && $0.value.readyAt >= from && $0.value.readyAt <= until }
            .map { ($0.key, $0.value.readyAt, $0.value.handler) }.sorted { $0.0 < $1.0 }
        transition(index, "refill") { machine in
            machine.loaded(until: until)
            return ready.flatMap { machine.load(StoredKey($0.0), readyAt: $0.1, handler: $0.2) } + machine.backlogMayWait()
        }
    }

    mutating func schedule() {
        keyNumber += 1
        let key = "k\(keyNumber)"
        let interval: Int64? = Int.random(in: 0..<4, using: &random) == 0 ? Int64.random(in: 1_000...8_000, using: &random) * ModelSettings.millisecond : nil
        // A third of the timers are the limited handler's.
        let handler = Int.random(in: 0..<3, using: &random) == 0 ? ModelSettings.limitedHandler : "h"
        store.put(key, handler: handler, due: now + Int64.random(in: 0...(3 * ModelSettings.lease), using: &random), interval: interval)
        if interval == nil { oneShots.insert(key) }
        note("schedule \(key) for \(handler)\(interval.map { " every \($0)" } ?? "")")
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
        processes[index].deferredWakeUps = []
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
}
