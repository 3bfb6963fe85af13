import TimerKit

/// A counting semaphore for async callers, first come first served. A waiter whose task is
/// cancelled leaves the queue at once and gets no permit.
///
/// The store keeps the application's share of its connection pool with it (see
/// ``PostgresTimerStore/Lane``): calls of the general lane hold a permit while they hold a
/// connection, so that the pool always has connections the reserved lane's calls do not queue for.
final class Permits: Sendable {
    private struct State {
        var available: Int
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
        /// Callers between asking and being queued or served, and those of them cancelled meanwhile.
        var asking: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    init(_ count: Int) {
        precondition(count > 0, "Permits: at least one")
        state = Locked(State(available: count))
    }

    /// Waits for a permit; `false` (and no permit) if the calling task is cancelled first.
    func acquire() async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.asking.insert(state.nextID)
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let served = state.withLock { state -> Bool? in
                    state.asking.remove(id)
                    if state.cancelled.remove(id) != nil { return false }
                    if state.available > 0, state.waiters.isEmpty {
                        state.available -= 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let served { continuation.resume(returning: served) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if let index = state.waiters.firstIndex(where: { $0.id == id }) { return state.waiters.remove(at: index).continuation }
                if state.asking.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(returning: false)
        }
    }

    /// Gives a permit back: to the longest waiter, if any.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume(returning: true)
    }
}
