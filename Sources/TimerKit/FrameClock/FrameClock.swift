import Dispatch

/// Ticks at a frame rate: the display-link analog, without the retain cycle and off Apple platforms
/// too.
///
/// Each tick is a ``Frame``: the frame's timestamp, the target timestamp of the next frame, the
/// frame's index on the clock's grid, and how many frames were dropped since the last tick (a slow
/// handler or a busy machine), so that an animation advances by real elapsed time. Frames lie on a
/// fixed grid (C4) of ``frameDuration``; a handler slower than a frame gets the next tick late, with
/// the frames it missed counted, never a burst (C5).
///
/// ```swift
/// final class Spinner: Sendable {
///     let angle = Mutex(0.0)
///     private let frames = Mutex<FrameClock?>(nil)
///
///     func start() throws {
///         let clock = try FrameClock.start(framesPerSecond: 60, .bound(to: self) { spinner, _, frame in
///             spinner.angle.withLock { $0 += 90 * frame.elapsedSeconds }   // 90° per second
///         })
///         frames.withLock { $0 = clock }
///     }
/// }
/// ```
///
/// A frame clock holds its owner weakly (C11): the articles' `CADisplayLink` retain cycle cannot
/// happen, and once the owner is gone the clock ends itself. Like a timer, a running frame clock
/// runs until it is invalidated or its owner is gone, whether or not anyone keeps it (C12). ``isPaused`` stops the ticks like
/// `CADisplayLink.isPaused`; resuming continues on the same grid and counts no frame as dropped
/// for the pause. On a virtual clock (`TimerKitTesting`), frames are exact and instant.
public final class FrameClock: @unchecked Sendable {
    /// What a frame clock's handler receives.
    typealias Handler = @Sendable (FrameClock, Frame) -> Void

    private struct State {
        var isPaused = false
        var isInvalid = false
        /// The index of the last frame delivered; frame 0 is the start.
        var lastIndex: Int64 = 0
        /// The first frame index after the last resume: frames before it were not dropped.
        var resumedAt: Int64 = 0
        /// The timer that drives the frames; none while paused (so that a paused frame clock is
        /// held by its handles alone) or after the end.
        var timer: ScheduledTimer?
    }

    /// The clock the frames are read on.
    public let clock: TimerClock
    /// How many frames a second the clock ticks at.
    public let framesPerSecond: Int
    /// The time between frames: one second over ``framesPerSecond``, rounded to the nanosecond
    /// (at 60 Hz, 16 666 667 ns: 60 frames take 20 ns more than a second).
    public let frameDuration: Duration

    let frameNanoseconds: Int64
    /// Frame 0's timestamp, in nanoseconds on the clock.
    let origin: Int64
    /// How closely ticks follow the frame timestamps (``TimerPrecision``).
    public let precision: TimerPrecision
    private let delivery: TimerDelivery
    private let handler: Handler
    private let state = Locked(State())

    init(
        framesPerSecond: Int, clock: TimerClock, precision: TimerPrecision, origin: Int64, delivery: TimerDelivery,
        handler: @escaping Handler
    ) {
        self.clock = clock
        self.precision = precision
        self.delivery = delivery
        self.framesPerSecond = framesPerSecond
        self.frameNanoseconds = (1_000_000_000 + Int64(framesPerSecond) / 2) / Int64(framesPerSecond)
        self.frameDuration = .nanoseconds(frameNanoseconds)
        self.origin = origin
        self.handler = handler
    }

    /// Starts a timer whose first deadline is frame `index`'s timestamp. The timer holds the frame
    /// clock while it runs (C12: a running frame clock runs whether or not anyone keeps it).
    func start(at index: Int64) throws(TimerError) {
        let timer = try ScheduledTimer.make(
            interval: frameDuration, first: .at(TimerInstant(kind: clock.kind, nanoseconds: timestamp(of: index))),
            tolerance: .zero, precision: precision, clock: clock, policy: .coalesce, delivery: delivery, suspended: true
        ) { [self] _, fire in tick(fire) }
        let installed = state.withLock { state -> Bool in
            guard !state.isInvalid, !state.isPaused, state.timer == nil else { return false }
            state.timer = timer
            return true
        }
        if installed { timer.resume() } else { timer.invalidate() }
    }

    // MARK: Controlling

    /// Whether the ticks are paused. Setting it is idempotent and safe from any thread; resuming
    /// continues on the same grid at the next frame after now, counting neither dropped frames nor
    /// elapsed time for the pause. A paused frame clock is held by its handles alone: dropping the
    /// last one releases it.
    public var isPaused: Bool {
        get { state.withLock { $0.isPaused } }
        set {
            let next = nextFrameIndex(after: clock.nanosecondsNow)
            let (changed, stopped) = state.withLock { state -> (Bool, ScheduledTimer?) in
                guard !state.isInvalid, state.isPaused != newValue else { return (false, nil) }
                state.isPaused = newValue
                if !newValue { state.resumedAt = next }
                defer { if newValue { state.timer = nil } }
                return (true, newValue ? state.timer : nil)
            }
            stopped?.invalidate()
            if changed && !newValue { try? start(at: next) }
        }
    }

    /// Whether the clock still ticks, or can once resumed: `false` after ``invalidate()``, once its
    /// owner is gone, and once its clock was shut down.
    public var isValid: Bool {
        let (isInvalid, timer) = state.withLock { ($0.isInvalid, $0.timer) }
        return !isInvalid && (timer?.isValid ?? true)
    }

    /// Stops the clock for good (C8): once this returns, no new tick begins.
    public func invalidate() {
        let timer = state.withLock { state -> ScheduledTimer? in
            state.isInvalid = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.invalidate()
    }

    // MARK: Frames

    private func tick(_ fire: TimerFire) {
        // The latest frame that has come: the fire may stand for several (C5).
        let latestDeadline = fire.scheduledDeadline.nanoseconds.addingSaturating(Int64(fire.deadlineCount - 1).multipliedSaturating(by: frameNanoseconds))
        let index = origin.duration(to: latestDeadline) / frameNanoseconds
        let frame = state.withLock { state -> Frame? in
            guard !state.isInvalid, !state.isPaused, index > state.lastIndex else { return nil }
            // The frame this one follows: the last delivered, or the one before the resume.
            let previous = max(state.lastIndex, state.resumedAt - 1)
            let dropped = Int(clamping: max(0, index - previous - 1))
            let elapsedFrames = index - previous
            state.lastIndex = index
            return Frame(
                timestamp: TimerInstant(kind: clock.kind, nanoseconds: timestamp(of: index)),
                targetTimestamp: TimerInstant(kind: clock.kind, nanoseconds: timestamp(of: index + 1)),
                index: index,
                droppedSinceLast: dropped,
                elapsed: frameDuration * elapsedFrames,
                deliveredAt: fire.firedAt)
        }
        if let frame { handler(self, frame) }
    }

    func timestamp(of index: Int64) -> Int64 {
        origin.addingSaturating(index.multipliedSaturating(by: frameNanoseconds))
    }

    /// The index of the first frame whose timestamp is after `now`.
    private func nextFrameIndex(after now: Int64) -> Int64 {
        guard now >= origin else { return 1 }
        return origin.duration(to: now) / frameNanoseconds + 1
    }
}
