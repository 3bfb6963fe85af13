import Foundation
import TimerKit

// Running a claimed occurrence's handler: its task, its timeout, and how it ended.

extension DurableTimers.Runner {
    /// Starts the handler of a claimed occurrence in a task of its own (on the clock's task
    /// executor), with its timeout armed; its end goes back to the machine.
    func startRun(_ key: StoredKey, _ start: RunnerStateMachine.Start) {
        let token = start.token
        guard let registered = handler(start.record.handler) else {
            // Registered when the claim was decided; a runner never unregisters.
            let now = context.now()
            transition { $0.handlerEnded(key, token: token, result: .threw("no handler named '\(start.record.handler)'"), duration: .zero, now: now) }
            return
        }
        let task = Task(executorPreference: context.clock.taskExecutor) {
            await DurableTransactionScope.outside { await self.run(key, start, registered.handler) }
        }
        let timeout = registered.timeout ?? context.options.handlerTimeout
        let callback = timeout.flatMap { armTimeout(key, token: token, after: $0) }
        // Stored unless the run has ended already (it can end before this line); cancelled at once
        // if a removal or a lost lease raced the start.
        let (stored, cancelled) = withHandles { machine, handles -> (Bool, Bool) in
            guard case .running(let run)? = machine.occurrences[key]?.phase, run.token == token else { return (false, false) }
            handles.runs[key] = RunHandle(token: token, task: task, timeout: callback)
            return (true, run.cancellation != nil)
        }
        if !stored { callback?.cancel() }
        if cancelled { task.cancel() }
    }

    private func armTimeout(_ key: StoredKey, token: String, after limit: Duration) -> ScheduledCallback? {
        try? context.clock.schedule(at: .after(limit)) { [weak self] in
            self?.transition { $0.timedOut(key, token: token, description: "\(limit)") }
        }
    }

    /// The body of a run's task: the handler, then its end.
    private func run(_ key: StoredKey, _ start: RunnerStateMachine.Start, _ handler: Handler) async {
        let (record, plan) = (start.record, start.plan)
        let fire = DurableFire(
            namespace: context.namespace, key: record.key, scheduledDeadline: Date(nanosecondsSince1970: plan.scheduledDeadline),
            firedAt: Date(nanosecondsSince1970: start.claimedAt), deadlineCount: plan.deadlineCount, skippedDeadlineCount: plan.skippedCount,
            attempt: record.attempts, sequence: record.sequence)
        let startedAt = context.now()
        context.options.onEvent(
            .started(key: record.key, handler: record.handler, attempt: record.attempts, lateness: .nanoseconds(plan.scheduledDeadline.duration(to: startedAt)))
        )
        let result: RunnerStateMachine.HandlerResult
        do {
            if let instrumentation = context.options.instrumentation {
                let timer = DurableScheduling(
                    namespace: record.namespace, key: record.key, handler: record.handler, repeats: record.recurrence != .none, deadline: fire.scheduledDeadline
                )
                try await instrumentation.run(fire, of: timer, traceContext: record.traceContext) { try await handler(record.payload, fire) }
            } else {
                try await handler(record.payload, fire)
            }
            result = .returned
        } catch let error as PayloadDecodingFailed {
            result = .undecodable(error.reason)
        } catch {
            result = .threw("\(error)")
        }
        let endedAt = context.now()
        transition { $0.handlerEnded(key, token: start.token, result: result, duration: .nanoseconds(startedAt.duration(to: endedAt)), now: endedAt) }
        let handle = withHandles { _, handles in handles.runs[key]?.token == start.token ? handles.runs.removeValue(forKey: key) : nil }
        handle?.timeout?.cancel()
    }
}
