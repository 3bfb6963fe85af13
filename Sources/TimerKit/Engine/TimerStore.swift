/// The data structure that holds an engine's pending timers, ordered by (key, creation order).
///
/// The key is the latest instant the timer may fire at: its deadline plus its tolerance. Every
/// method is called under the engine's lock. A store records each timer's position in the timer
/// itself (``ScheduledTimer/storeSlot``), so removal needs no search.
protocol TimerStore {
    /// The number of timers held.
    var count: Int { get }

    /// The timer with the smallest key (ties: the earliest created), if any.
    var first: ScheduledTimer? { get }

    /// Adds a timer that is not in the store, under `timer.storeKey`.
    mutating func insert(_ timer: ScheduledTimer)

    /// Removes a timer that is in the store.
    mutating func remove(_ timer: ScheduledTimer)

    /// Removes and returns the timer with the smallest key.
    mutating func removeFirst() -> ScheduledTimer?

    /// Removes every timer and returns them.
    mutating func removeAll() -> [ScheduledTimer]
}

extension ScheduledTimer {
    /// Whether `self` comes before `other` in a store: by key, then by creation order.
    @inline(__always)
    func precedesInStore(_ other: ScheduledTimer) -> Bool {
        storeKey < other.storeKey || (storeKey == other.storeKey && id < other.id)
    }
}
