/// What operating a namespace needs of a store, beside what its runners need
/// (``DurableRunnerStore``): reading and counting timers by filter, their history, pauses, moving
/// a timer to run now, the instances that recorded themselves, and the counts by handler.
package protocol DurableOperatingStore: Sendable {
    /// The namespace's timers whose handler is not one of `handlers`, at most `limit`.
    func orphans(namespace: String, handlers: [String], limit: Int) async throws(DurableTimerError) -> [DurableTimerRecord]

    /// The namespace's timers that `filter` matches at `now`, in key order, after `afterKey`, at
    /// most `limit`.
    func query(namespace: String, _ filter: DurableTimerFilter, now: Int64, afterKey: String?, limit: Int) async throws(DurableTimerError)
        -> [DurableTimerRecord]

    /// How many timers the namespace holds.
    func count(namespace: String) async throws(DurableTimerError) -> Int

    /// The timer's last runs, newest first, at most `limit`.
    func history(namespace: String, key: String, limit: Int) async throws(DurableTimerError) -> [DurableTimerRun]

    /// Holds the timer out of every claim (a paused timer is also parked in the store's terms, so
    /// that every claim statement passes it by), remembering whether it was parked; returns
    /// whether a timer is stored under the key. A running one finishes its run and then waits.
    func pause(namespace: String, key: String) async throws(DurableTimerError) -> Bool

    /// Lets a paused timer be claimed again (parked again if it was parked when paused); returns
    /// it as stored, or `nil` when none is stored or it was not paused.
    func resume(namespace: String, key: String) async throws(DurableTimerError) -> DurableTimerRecord?

    /// Pauses `handler`'s timers (every timer of the namespace when `nil`): records the pause, so
    /// that timers scheduled meanwhile are stored paused, and then pauses the stored ones in
    /// writes of at most `batch` rows (no lock held long). Returns how many it paused.
    func pause(namespace: String, handler: String?, now: Int64, batch: Int) async throws(DurableTimerError) -> Int

    /// Removes the pause of `handler` (of the namespace when `nil`) and resumes its paused timers
    /// — those paused one by one too — in writes of at most `batch` rows; a handler's timers stay
    /// paused while the namespace is. Returns how many it resumed.
    func resume(namespace: String, handler: String?, batch: Int) async throws(DurableTimerError) -> Int

    /// Makes the timer ready at `now` (the store's now, for a store with a clock of its own)
    /// without moving its occurrence, if it is stored, neither parked nor paused, no live lease
    /// holds it, and it is not ready already; returns it as stored, or `nil`. Other runners are
    /// told as of any write that makes a timer ready.
    func expedite(namespace: String, key: String, now: Int64) async throws(DurableTimerError) -> DurableTimerRecord?

    /// The pauses recorded: handler names, `nil` for the whole namespace, with when.
    func pauses(namespace: String) async throws(DurableTimerError) -> [DurablePause]

    /// The instances that recorded themselves, the most recently seen first.
    func instances(namespace: String) async throws(DurableTimerError) -> [DurableInstance]

    /// Counts of the namespace's timers by handler and status at `now`, with each handler's
    /// earliest due time among due timers, its repeating timers whose occurrence came before
    /// `lateBefore`, and the lateness of its runs that started since `since`.
    func stats(namespace: String, now: Int64, lateBefore: Int64, since: Int64) async throws(DurableTimerError) -> [DurableHandlerCounts]
}
