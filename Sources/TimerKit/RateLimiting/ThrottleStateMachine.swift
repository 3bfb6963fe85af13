/// A throttler's decisions, as a value: windows, edges and stale timers. ``Throttler`` keeps one
/// in its ``RateLimiterStorage`` and acts on what it returns.
struct ThrottleStateMachine<Value>: RateLimitingStateMachine {
    /// What a sent value asks for.
    struct Sent {
        /// The value to run at once, if it opened a window with `leading`.
        var runNow: Value?
        /// The generation of the window it opened, whose end must be timed; `nil` if a window was
        /// open already.
        var openedWindow: UInt64?
    }

    /// What the end of window `generation` means now.
    enum Edge {
        /// The window was closed meanwhile (a flush or a cancel): nothing.
        case stale
        /// Nothing waited: the throttler is idle.
        case idle
        /// A value waited: it runs and opens the next window, of this generation, whose end must be
        /// timed.
        case run(Value, nextWindow: UInt64)
    }

    let leading: Bool
    let trailing: Bool
    let latest: Bool

    /// The value the window's end will run with.
    private(set) var pending: Value?
    /// Whether a window is open.
    private var isOpen = false
    /// Counts the windows: an expiry of an older one is stale.
    private(set) var generation: UInt64 = 0

    init(leading: Bool, trailing: Bool, latest: Bool) {
        self.leading = leading
        self.trailing = trailing
        self.latest = latest
    }

    /// A value sent: runs at once if it opens a window (with `leading`), waits for the window's
    /// end (with `trailing`), or is dropped.
    mutating func send(_ value: Value) -> Sent {
        if isOpen {
            if trailing && (latest || pending == nil) { pending = value }
            return Sent(runNow: nil, openedWindow: nil)
        }
        isOpen = true
        generation &+= 1
        if leading { return Sent(runNow: value, openedWindow: generation) }
        pending = value
        return Sent(runNow: nil, openedWindow: generation)
    }

    /// Closes the window at once (a flush or a cancel); returns the value that was waiting.
    mutating func closeWindow() -> Value? {
        defer {
            pending = nil
            isOpen = false
            generation &+= 1
        }
        return pending
    }

    /// The end timer of window `generation` expired.
    mutating func edgeTimerExpired(_ timerGeneration: UInt64) -> Edge {
        guard generation == timerGeneration else { return .stale }
        guard let value = pending else {
            isOpen = false
            return .idle
        }
        pending = nil
        generation &+= 1
        return .run(value, nextWindow: generation)
    }
}

extension ThrottleStateMachine: Sendable where Value: Sendable {}
