import TimerKit

/// A one-way gate for async callers: closed until ``open()``, open for good after. A waiter whose
/// task is cancelled stops waiting at once.
///
/// The store's calls wait on one until the database has answered its opening (the schema checked,
/// the clock measured): a store made while the database was away serves its callers once it is
/// back.
final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var asking: Set<UInt64> = []
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    init(isOpen: Bool = false) { state = Locked(State(isOpen: isOpen)) }

    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the gate and lets every waiter through. Idempotent.
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Returns `true` once the gate is open, `false` if the calling task is cancelled first.
    func wait() async -> Bool {
        let id = state.withLock { state -> UInt64? in
            guard !state.isOpen else { return nil }
            state.nextID += 1
            state.asking.insert(state.nextID)
            return state.nextID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let passed = state.withLock { state -> Bool? in
                    state.asking.remove(id)
                    if state.cancelled.remove(id) != nil { return false }
                    if state.isOpen { return true }
                    state.waiters[id] = continuation
                    return nil
                }
                if let passed { continuation.resume(returning: passed) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if state.asking.contains(id) { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(returning: false)
        }
    }
}
