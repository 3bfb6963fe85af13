/// The handler slots of a runner: at most ``capacity`` keys claiming or running at once, and, for a
/// handler with a limit of its own (``DurableTimers/register(_:payload:timeout:retry:maxConcurrentRuns:lease:_:)``),
/// at most that many of its keys. Keys that came due while their handler had no room wait here, in
/// order, unclaimed (another instance may run them meanwhile).
///
/// Which key holds which handler's slot is the occurrence's (``RunnerStateMachine/Occurrence/slotHandler``):
/// this counts the slots and keeps the queues.
struct Admission: Sendable, Equatable {
    /// `maxConcurrentHandlers`: slots in all.
    let capacity: Int
    /// The handlers with a limit of their own, and the limit.
    private var limits: [String: Int] = [:]
    /// Slots taken, by every handler.
    private(set) var taken = 0
    /// Slots taken by each handler with a limit of its own, at most its limit; no entry for none.
    private(set) var takenByHandler: [String: Int] = [:]
    /// Keys waiting for a slot of their handler, per handler, in the order they came due.
    private var waiting: [String: RunnerStateMachine.KeyQueue] = [:]

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Slots not taken.
    var free: Int { capacity - taken }

    /// The limit `handler` registered with, if it has one.
    func limit(for handler: String) -> Int? { limits[handler] }

    mutating func setLimit(_ limit: Int, for handler: String) {
        limits[handler] = limit
    }

    /// Whether `handler` may take one more slot of its own: it has no limit, or room under it.
    func hasRoom(_ handler: String) -> Bool {
        guard let limit = limits[handler] else { return true }
        return takenByHandler[handler, default: 0] < limit
    }

    /// The handlers with a limit of their own that have no room, in order.
    var fullHandlers: [String] { limits.keys.filter { !hasRoom($0) }.sorted() }

    /// Takes `count` slots (the caller checked there are as many free).
    mutating func take(_ count: Int = 1) {
        taken += count
    }

    /// Gives `count` slots back.
    mutating func give(_ count: Int = 1) {
        taken -= count
    }

    /// Takes a slot of `handler`'s own, if it has a limit: `true` when it took one.
    mutating func takeHandlerSlot(_ handler: String) -> Bool {
        guard limits[handler] != nil else { return false }
        takenByHandler[handler, default: 0] += 1
        return true
    }

    /// Gives back a slot of `handler`'s own.
    mutating func giveHandlerSlot(_ handler: String) {
        assert(takenByHandler[handler] != nil, "a slot of '\(handler)' given back that was not taken")
        takenByHandler[handler, default: 0] -= 1
        if takenByHandler[handler] == 0 { takenByHandler[handler] = nil }
    }

    // MARK: Keys waiting for a slot of their handler

    /// `key` came due while `handler` had no room: it waits for a slot.
    mutating func wait(_ key: StoredKey, for handler: String) {
        waiting[handler, default: RunnerStateMachine.KeyQueue()].append(key)
    }

    /// The handlers keys wait for, in order.
    var waitingHandlers: [String] { waiting.keys.sorted() }

    /// The queues of waiting keys (a key may stand in one more than once).
    var waitingQueues: [RunnerStateMachine.KeyQueue] { Array(waiting.values) }

    /// The next key waiting for `handler`.
    mutating func nextWaiting(for handler: String) -> StoredKey? {
        waiting[handler]?.popFirst()
    }

    /// Forgets `handler`'s queue once it is empty.
    mutating func dropQueueIfEmpty(for handler: String) {
        if waiting[handler]?.isEmpty == true { waiting[handler] = nil }
    }

    /// Forgets every waiting key (a shutdown).
    mutating func stopWaiting() {
        waiting = [:]
    }
}
