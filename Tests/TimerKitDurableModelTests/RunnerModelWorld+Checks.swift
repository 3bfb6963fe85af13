import Foundation
import TimerKitTesting

@testable import TimerKitDurable

// What must hold in the model: after every transition, and after the faults heal.

extension ModelWorld {
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
        if machine.slotsTaken != claiming + running + machine.sweeping || machine.slotsTaken > 2 || machine.slotsTaken < 0 {
            violations.append(
                "p\(processes[index].id): \(machine.slotsTaken) slots taken for \(claiming) claiming, \(running) running and \(machine.sweeping) sweeping")
        }
        // The limited handler's slots: one per occurrence holding one, every run of it holding
        // one, never more than its limit.
        let limited = ModelSettings.limitedHandler
        let holding = machine.occurrences.values.filter { $0.slotHandler == limited }.count
        let unslotted = machine.occurrences.values.contains { occurrence in
            if case .running(let run) = occurrence.phase { return run.handler == limited && occurrence.slotHandler != limited }
            return false
        }
        if holding != machine.handlerSlots[limited, default: 0] || holding > 1 || unslotted {
            violations.append(
                "p\(processes[index].id): \(machine.handlerSlots[limited, default: 0]) slots of \(limited) taken, \(holding) occurrences hold one\(unslotted ? ", a run of it holds none" : "")"
            )
        }
        // Every occurrence the machine holds armed has its wake-up, of its generation, armed or
        // about to be (an arm not carried out yet).
        for (key, occurrence) in machine.occurrences {
            guard case .armed(_, let generation) = occurrence.phase, processes[index].wakeUps[key]?.generation != generation else { continue }
            let pending = processes[index].deferredWakeUps.contains { action in
                if case .arm(key, _, generation) = action { return true }
                return false
            }
            if !pending { violations.append("p\(processes[index].id): \(key) is armed for generation \(generation) in the machine, with no wake-up") }
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
            case .sweep: false
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
                case .queued:
                    // Waiting for a slot of its handler is not stuck while its handler has none free.
                    let hasRoom =
                        occurrence.handler.map { handler in machine.limit(for: handler).map { machine.handlerSlots[handler, default: 0] < $0 } ?? true } ?? true
                    stuck = machine.slotsTaken < 2 && !machine.isClaimRoundInFlight && hasRoom
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
