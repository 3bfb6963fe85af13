/// The runner's loads from the store, as decisions: one load of the horizon at a time, and one of
/// a window beside it.
///
/// A request that comes while a load of its kind runs is served by one more load after it: a
/// burst of requests costs two loads, not one each. Windows asked for meanwhile are merged into
/// that one load. A horizon cut short at ``DurableTimers/Options/maximumArmed`` goes on from where
/// it stopped, unless a reload was asked for meanwhile: then it starts from the beginning.
struct Loads: Sendable, Equatable {
    /// The load of the horizon.
    enum Horizon: Sendable, Equatable {
        case idle
        /// `again`: a request came while it ran, so one more load follows.
        case loading(again: Bool)
    }

    /// The load of a window.
    enum Window: Sendable, Equatable {
        case idle
        /// `next`: the windows asked for while it ran, merged.
        case loading(next: ClosedRange<Int64>?)
    }

    /// Where a load of the horizon starts, and which reload it belongs to.
    struct Start: Sendable, Equatable {
        /// The last timer the previous load read, when it was cut short; `nil`: the beginning.
        var after: DurableTimerCursor?
        fileprivate var reload: Int
    }

    private(set) var horizon = Horizon.idle
    private(set) var window = Window.idle
    /// Where the next load of the horizon goes on from; `nil` to start from the beginning.
    private(set) var resumeAfter: DurableTimerCursor?
    /// Counts the reloads asked for: a load that began before one leaves no cursor to go on from.
    private var reloads = 0

    /// A load of the horizon is asked for: `true` to begin one now; `false` when one runs (the
    /// request is served by the load after it).
    mutating func requestHorizon() -> Bool {
        switch horizon {
        case .idle:
            horizon = .loading(again: false)
            return true
        case .loading:
            horizon = .loading(again: true)
            return false
        }
    }

    /// The load of the horizon ended: `true` to load once more (requests came meanwhile).
    mutating func horizonEnded() -> Bool {
        let again = horizon == .loading(again: true)
        horizon = again ? .loading(again: false) : .idle
        return again
    }

    /// Where the load of the horizon beginning now starts.
    var start: Start { Start(after: resumeAfter, reload: reloads) }

    /// The load that began at `start` read up to `cursor` and stopped there (`nil`: it read
    /// everything): the next goes on from there, unless a reload was asked for meanwhile.
    mutating func horizonRead(from start: Start, cutAt cursor: DurableTimerCursor?) {
        resumeAfter = start.reload == reloads ? cursor : nil
    }

    /// Changes may have been missed anywhere: the next load of the horizon starts from the
    /// beginning, and one under way leaves no cursor.
    mutating func reload() {
        resumeAfter = nil
        reloads &+= 1
    }

    /// A load of `window` is asked for: the window to load now, or `nil` when one is being
    /// loaded (it is merged into the next).
    mutating func requestWindow(_ requested: ClosedRange<Int64>) -> ClosedRange<Int64>? {
        switch window {
        case .idle:
            window = .loading(next: nil)
            return requested
        case .loading(let next):
            window = .loading(next: next.map { min($0.lowerBound, requested.lowerBound)...max($0.upperBound, requested.upperBound) } ?? requested)
            return nil
        }
    }

    /// The load of a window ended: the window to load next, or `nil` when none was asked for.
    mutating func windowEnded() -> ClosedRange<Int64>? {
        guard case .loading(let next?) = window else {
            window = .idle
            return nil
        }
        window = .loading(next: nil)
        return next
    }
}
