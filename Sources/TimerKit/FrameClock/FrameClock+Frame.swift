extension FrameClock {
    /// One tick of a frame clock.
    public struct Frame: Sendable, Hashable, CustomStringConvertible {
        /// This frame's instant on the grid: the latest frame time that has come (like
        /// `CADisplayLink.timestamp`).
        public let timestamp: TimerInstant
        /// The next frame's instant: what to render for (like `CADisplayLink.targetTimestamp`).
        public let targetTimestamp: TimerInstant
        /// The frame's number on the clock's grid: frame 0 is the clock's start, frame `k` is
        /// `k · frameDuration` after it.
        public let index: Int64
        /// How many frames passed without a tick since the last one (a slow handler, a busy
        /// machine); 0 when the clock keeps up. Frames while paused are not counted.
        public let droppedSinceLast: Int
        /// The time since the previous frame's timestamp — the last one delivered, or the start,
        /// or the frame before a resume (a pause is not elapsed time): advance an animation by this.
        public let elapsed: Duration
        /// ``elapsed`` in seconds, for animation arithmetic.
        public var elapsedSeconds: Double {
            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }

        /// When the tick was actually delivered, on the clock: at or after ``timestamp`` (C2).
        public let deliveredAt: TimerInstant

        public var description: String {
            "Frame(#\(index), at: \(timestamp), dropped: \(droppedSinceLast))"
        }
    }
}
