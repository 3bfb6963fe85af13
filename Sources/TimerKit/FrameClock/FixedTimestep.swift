/// The game loop's fixed timestep on top of a ``FrameClock``: accumulate the real time that frames
/// report, step the simulation in fixed steps, and cap the catch-up so that a long stall cannot
/// trigger a "spiral of death".
///
/// ```swift
/// var physics = FixedTimestep(step: .milliseconds(10), maxStepsPerFrame: 8)
/// let frames = try FrameClock.start(framesPerSecond: 60) { _, frame in
///     let steps = physics.advance(by: frame.elapsed)   // (keep `physics` behind a lock when shared)
///     for _ in 0..<steps.count { world.step(0.010) }
///     render(interpolating: steps.alpha)
/// }
/// ```
///
/// A frame rate that is not a multiple of the step rate (60 Hz frames, 100 Hz physics) gives 1 or
/// 2 steps per frame, never drift: the leftover time carries over, and ``Steps/alpha`` is the
/// fraction of a step it makes, for render interpolation.
public struct FixedTimestep: Sendable, Hashable {
    /// What one ``advance(by:)`` asks for.
    public struct Steps: Sendable, Hashable {
        /// How many fixed steps to run now.
        public let count: Int
        /// The leftover time as a fraction of a step, in `0..<1`: how far the state to render lies
        /// between the last step and the next.
        public let alpha: Double
        /// Time dropped because the catch-up was capped (0 when the loop keeps up).
        public let dropped: Duration
    }

    /// The simulation's step.
    public let step: Duration
    /// The most steps one advance may ask for; time beyond that is dropped.
    public let maxStepsPerFrame: Int
    /// The time accumulated and not yet stepped: always less than one step after an advance.
    public private(set) var accumulated: Duration = .zero

    /// Creates a fixed timestep.
    ///
    /// - Precondition: `step` is positive and `maxStepsPerFrame` at least 1.
    public init(step: Duration, maxStepsPerFrame: Int = 8) {
        precondition(step > .zero, "FixedTimestep: the step must be positive, got \(step)")
        precondition(maxStepsPerFrame >= 1, "FixedTimestep: maxStepsPerFrame must be at least 1, got \(maxStepsPerFrame)")
        self.step = step
        self.maxStepsPerFrame = maxStepsPerFrame
    }

    /// Adds a frame's elapsed time and says how many steps to run now. A negative elapsed time
    /// counts as zero.
    public mutating func advance(by elapsed: Duration) -> Steps {
        let step = self.step.saturatingNanoseconds
        let total = accumulated.saturatingNanoseconds.addingSaturating(max(0, elapsed.saturatingNanoseconds))
        let due = total / step
        let count = Int(min(due, Int64(maxStepsPerFrame)))
        let left = total % step
        // Beyond the cap, whole steps are dropped; what is left of the last one carries over.
        let dropped = (due - Int64(count)) * step
        accumulated = .nanoseconds(left)
        return Steps(count: count, alpha: Double(left) / Double(step), dropped: .nanoseconds(dropped))
    }
}
