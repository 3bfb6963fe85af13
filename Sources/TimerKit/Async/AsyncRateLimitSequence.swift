extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The elements of this sequence, debounced on a TimerKit clock: the elements a ``Debouncer``
    /// with the same options would run, as a sequence.
    ///
    /// ```swift
    /// for try await query in try searchField.texts.debounced(for: .milliseconds(300)) {
    ///     results = try await search(query)
    /// }
    /// ```
    ///
    /// When this sequence ends, a value still waiting for its trailing edge is delivered at once,
    /// then the debounced sequence ends — it is never dropped; when this sequence fails, the waiting
    /// value is delivered, then the error is thrown. See ``Debouncer`` for the options.
    ///
    /// - Throws: The errors of ``Debouncer/init(delay:leading:trailing:maxWait:clock:delivery:_:)-(_,_,_,_,_,_,(Value)->Void)``.
    public func debounced(
        for delay: Duration, leading: Bool = false, trailing: Bool = true, maxWait: Duration? = nil, clock: TimerClock = .continuous
    ) throws(TimerError) -> AsyncRateLimitSequence<Self> {
        // Check the options now, so that a bad one fails here rather than at the first element.
        _ = try Debouncer<Element>.validated(delay: delay, leading: leading, trailing: trailing, maxWait: maxWait)
        return AsyncRateLimitSequence(base: self, clock: clock) { (action) throws(TimerError) in
            let debouncer = try Debouncer<Element>(delay: delay, leading: leading, trailing: trailing, maxWait: maxWait, clock: clock, action)
            return AsyncRateLimitSequence.Limiter(send: debouncer.send, flush: { _ = try debouncer.flush() }, cancel: { _ = debouncer.cancel() })
        }
    }

    /// The elements of this sequence, throttled on a TimerKit clock: the elements a ``Throttler``
    /// with the same options would run, as a sequence.
    ///
    /// ```swift
    /// for try await offset in try scrollOffsets.throttled(for: .milliseconds(100)) { updateHeader(offset) }
    /// ```
    ///
    /// When this sequence ends, a value still waiting for the end of its window is delivered at
    /// once, then the throttled sequence ends; when it fails, the waiting value is delivered, then
    /// the error is thrown. See ``Throttler`` for the options.
    ///
    /// - Throws: The errors of ``Throttler/init(interval:leading:trailing:latest:clock:delivery:_:)-(_,_,_,_,_,_,(Value)->Void)``.
    public func throttled(
        for interval: Duration, leading: Bool = true, trailing: Bool = true, latest: Bool = true, clock: TimerClock = .continuous
    ) throws(TimerError) -> AsyncRateLimitSequence<Self> {
        // Check the options now, so that a bad one fails here rather than at the first element.
        _ = try Throttler<Element>.validated(interval: interval, leading: leading, trailing: trailing)
        return AsyncRateLimitSequence(base: self, clock: clock) { (action) throws(TimerError) in
            let throttler = try Throttler<Element>(interval: interval, leading: leading, trailing: trailing, latest: latest, clock: clock, action)
            return AsyncRateLimitSequence.Limiter(send: throttler.send, flush: { _ = try throttler.flush() }, cancel: { _ = throttler.cancel() })
        }
    }
}

/// A debounced or throttled `AsyncSequence`: see `debounced(for:leading:trailing:maxWait:clock:)`
/// and `throttled(for:leading:trailing:latest:clock:)`.
///
/// Each iterator consumes the base sequence in a task of its own (on the clock's executor for a
/// virtual clock) and feeds a ``Debouncer`` or a ``Throttler``, whose runs are the elements. The
/// elements that come out are few by construction, so they wait for a slow consumer without limit
/// and none is dropped. Cancelling the iterating task, or leaving the loop, stops the base
/// sequence's task and drops a waiting value.
public struct AsyncRateLimitSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    public typealias Element = Base.Element
    public typealias Failure = any Error

    /// The operations of a debouncer or throttler that the sequence drives.
    struct Limiter: Sendable {
        let send: @Sendable (Element) throws(TimerError) -> Void
        let flush: @Sendable () throws -> Void
        let cancel: @Sendable () -> Void
    }

    let base: Base
    let clock: TimerClock
    let makeLimiter: @Sendable (_ action: @escaping @Sendable (Element) -> Void) throws(TimerError) -> Limiter

    public func makeAsyncIterator() -> Iterator {
        let (stream, continuation) = AsyncThrowingStream<Element, any Error>.makeStream()
        let limiter: Limiter
        do {
            limiter = try makeLimiter { continuation.yield($0) }
        } catch {
            // The options were checked when the sequence was made; only a shut-down clock is left.
            continuation.finish(throwing: error)
            return Iterator(elements: stream.makeAsyncIterator())
        }
        let base = base
        let clock = clock
        let pump = Task(executorPreference: clock.toolExecutor) {
            var failure: (any Error)?
            do {
                for try await element in base { try limiter.send(element) }
            } catch {
                failure = error
            }
            // Deliver a waiting value, then end: through the engine, so that the value's run,
            // scheduled first, comes first.
            do {
                try limiter.flush()
                try clock.schedule(at: .now) { [failure] in continuation.finish(throwing: failure) }
            } catch {
                continuation.finish(throwing: failure ?? error)
            }
        }
        continuation.onTermination = { _ in
            pump.cancel()
            limiter.cancel()
        }
        return Iterator(elements: stream.makeAsyncIterator())
    }

    /// Iterates an ``AsyncRateLimitSequence``.
    public struct Iterator: AsyncIteratorProtocol {
        var elements: AsyncThrowingStream<Element, any Error>.AsyncIterator

        public mutating func next() async throws -> Element? {
            try await elements.next()
        }
    }
}
