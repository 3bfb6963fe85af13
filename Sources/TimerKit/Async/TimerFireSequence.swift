/// The fires of a repeating timer as an `AsyncSequence`, for `for await` (C15).
///
/// The timer starts when the iteration does: its first deadline is `first` (by default one
/// interval) after the first call to `next()`, so a sequence that is created early and iterated
/// later does not begin with a backlog, and one that is never iterated never fires.
///
/// The sequence ends when its timer is invalidated (by ``timer``'s ``ScheduledTimer/invalidate()``,
/// or because its clock shut down): fires still waiting for the consumer are dropped, so none
/// comes after `invalidate()` returns (C8). Cancelling the task that iterates it, or dropping the iterator
/// (leaving a `for await` loop early), invalidates the timer. It has one consumer: make one
/// iterator.
///
/// A consumer slower than the timer does not make fires pile up without bound. Fires that come
/// while the consumer is busy wait in a small buffer: under ``MissedDeadlinePolicy/coalesce`` they
/// merge into one element whose ``TimerFire/deadlineCount`` adds theirs up; under
/// ``MissedDeadlinePolicy/skip`` only the newest waits; under
/// ``MissedDeadlinePolicy/burst(maxFires:)`` up to `maxFires` wait, the last absorbing the rest.
///
/// ```swift
/// for await fire in try ScheduledTimer.fires(every: .seconds(1)) {
///     print("tick", fire.sequenceNumber)
/// }
/// ```
public struct TimerFireSequence: AsyncSequence, Sendable {
    public typealias Element = TimerFire
    public typealias Failure = Never

    /// The timer behind the sequence: invalidate it to end the sequence.
    public let timer: ScheduledTimer
    let channel: HandOffChannel<TimerFire>
    let start: TimerStart

    public func makeAsyncIterator() -> Iterator {
        Iterator(lease: Lease(timer: timer), channel: channel, start: start)
    }

    /// Iterates a ``TimerFireSequence``.
    public struct Iterator: AsyncIteratorProtocol {
        let lease: Lease
        let channel: HandOffChannel<TimerFire>
        let start: TimerStart
        var isStarted = false

        public mutating func next() async -> TimerFire? {
            let timer = lease.timer
            if !isStarted {
                isStarted = true
                // Fails only if the timer was invalidated meanwhile; then the channel is finished.
                try? timer.reschedule(at: start)
                timer.resume()
            }
            let channel = self.channel
            return await withTaskCancellationHandler {
                await channel.next()
            } onCancel: {
                timer.invalidate()
            }
        }
    }
}

@available(*, unavailable)
extension TimerFireSequence.Iterator: Sendable {}

extension TimerFireSequence {
    /// Invalidates the timer when the last copy of the iterator goes away.
    final class Lease: Sendable {
        let timer: ScheduledTimer

        init(timer: ScheduledTimer) { self.timer = timer }

        deinit { timer.invalidate() }
    }
}

extension ScheduledTimer {
    /// A repeating timer whose fires are the elements of an `AsyncSequence`.
    ///
    /// The timer starts when the iteration does. The parameters mean what they mean for
    /// ``repeating(every:first:tolerance:precision:clock:missedDeadlines:delivery:_:)-(_,_,_,_,_,_,_,(ScheduledTimer,TimerFire)->Void)``.
    ///
    /// - Throws: ``TimerError`` for bad input, as the other factories do.
    public static func fires(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce
    ) throws(TimerError) -> TimerFireSequence {
        let limit: Int =
            switch missedDeadlines {
            case .coalesce, .skip: 1
            case .burst(let maxFires): max(1, maxFires)
            }
        let mergesCounts = missedDeadlines != .skip
        let channel = HandOffChannel<TimerFire>(limit: limit, consumer: "TimerFireSequence (one task iterates a timer's fires)") { last, fire in
            // The deadlines of the fire displaced are not lost: merged in (coalesce, burst), or
            // reported as skipped before the newest (skip).
            mergesCounts
                ? TimerFire(
                    scheduledDeadline: last.scheduledDeadline,
                    firedAt: fire.firedAt,
                    deadlineCount: last.deadlineCount.addingSaturating(fire.deadlineCount),
                    skippedDeadlineCount: last.skippedDeadlineCount.addingSaturating(fire.skippedDeadlineCount),
                    sequenceNumber: fire.sequenceNumber)
                : TimerFire(
                    scheduledDeadline: fire.scheduledDeadline,
                    firedAt: fire.firedAt,
                    deadlineCount: fire.deadlineCount,
                    skippedDeadlineCount: last.skippedDeadlineCount.addingSaturating(last.deadlineCount).addingSaturating(fire.skippedDeadlineCount),
                    sequenceNumber: fire.sequenceNumber)
        }
        let timer = try make(
            interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines,
            delivery: .engineThread,
            suspended: true,
            onInvalidate: { channel.finish(droppingWaiting: true) },
            handler: { _, fire in channel.push(fire) })
        // A sequence that is never iterated lets its suspended timer go with it, by design.
        timer.releaseSilentlyWhenSuspended()
        return TimerFireSequence(timer: timer, channel: channel, start: first ?? .after(interval))
    }
}
