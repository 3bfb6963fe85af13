extension Countdown {
    /// A countdown whose ticks are the elements of an `AsyncSequence`, for `for await` (C15).
    ///
    /// The countdown starts when the iteration does (its first element is the value then), and the
    /// sequence ends after the final tick. A consumer slower than the ticks sees the newest value, not
    /// a backlog; the final tick is never dropped. Cancelling the iterating task, or leaving the loop
    /// early, cancels the countdown.
    ///
    /// ```swift
    /// for await tick in try Countdown.ticks(to: .after(.seconds(10))) {
    ///     print(tick.formatted())
    /// }
    /// ```
    public static func ticks(
        to deadline: TimerStart,
        unit: Duration = .seconds(1),
        clock: TimerClock = .continuous
    ) throws(TimerError) -> Ticks {
        // The newest tick waits; the final one is kept, and ends the sequence once taken.
        let channel = HandOffChannel<Tick>(
            limit: 1, consumer: "Countdown.Ticks (one task iterates a countdown's ticks)", isLast: \.isFinished
        ) { waiting, new in waiting.isFinished ? waiting : new }
        let countdown = try make(deadline: deadline, unit: unit, clock: clock, delivery: .engineThread, suspended: true) { _, tick in
            channel.push(tick)
        }
        return Ticks(countdown: countdown, channel: channel)
    }

    /// The ticks of a countdown as an `AsyncSequence` (see ``ticks(to:unit:clock:)``). One consumer.
    public struct Ticks: AsyncSequence, Sendable {
        public typealias Element = Tick
        public typealias Failure = Never

        /// The countdown behind the sequence: pause, resume or cancel it.
        public let countdown: Countdown
        let channel: HandOffChannel<Tick>

        public func makeAsyncIterator() -> Iterator {
            Iterator(lease: Lease(countdown: countdown), channel: channel)
        }

        /// Iterates ``Countdown/Ticks``.
        public struct Iterator: AsyncIteratorProtocol {
            let lease: Lease
            let channel: HandOffChannel<Tick>
            var isStarted = false

            public mutating func next() async -> Tick? {
                let countdown = lease.countdown
                if !isStarted {
                    isStarted = true
                    countdown.run(now: countdown.clock.nanosecondsNow, tickNow: true)
                }
                let channel = self.channel
                return await withTaskCancellationHandler {
                    await channel.next()
                } onCancel: {
                    countdown.cancel()
                    channel.finish(droppingWaiting: true)
                }
            }
        }
    }

    /// Cancels the countdown when the last copy of the iterator goes away.
    final class Lease: Sendable {
        let countdown: Countdown

        init(countdown: Countdown) { self.countdown = countdown }

        deinit { countdown.cancel() }
    }
}

@available(*, unavailable)
extension Countdown.Ticks.Iterator: Sendable {}
