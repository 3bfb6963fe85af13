/// The hand-off between a timer's handler and the one task iterating what it delivers (a
/// `TimerFireSequence`'s fires, a countdown's ticks): at most `limit` elements wait; one more
/// than that is merged into the newest waiting one, so that a slow consumer sees the latest state
/// and nothing is counted twice or lost. Decides under its lock, resumes the waiting task after.
final class HandOffChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var waiter: CheckedContinuation<Element?, Never>?
        var isFinished = false
    }

    private let state = Locked(State())
    private let limit: Int
    private let merge: @Sendable (_ waiting: Element, _ new: Element) -> Element
    private let isLast: @Sendable (Element) -> Bool
    private let consumer: String

    /// - Parameters:
    ///   - limit: How many elements may wait (at least 1).
    ///   - consumer: Names the sequence in the message that traps a second concurrent iteration.
    ///   - isLast: Whether an element ends the channel once taken (a countdown's final tick).
    ///   - merge: The element that stands for the newest waiting one and a new one, when full.
    init(
        limit: Int, consumer: String, isLast: @escaping @Sendable (Element) -> Bool = { _ in false },
        merge: @escaping @Sendable (_ waiting: Element, _ new: Element) -> Element
    ) {
        self.limit = max(1, limit)
        self.consumer = consumer
        self.isLast = isLast
        self.merge = merge
    }

    func push(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            guard !state.isFinished else { return nil }
            if isLast(element) { state.isFinished = true }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if state.buffer.count < limit {
                state.buffer.append(element)
            } else {
                state.buffer.append(merge(state.buffer.removeLast(), element))
            }
            return nil
        }
        waiter?.resume(returning: element)
    }

    /// Ends the channel: the waiting task gets `nil`; what waits in the buffer is still delivered,
    /// unless `droppingWaiting`.
    func finish(droppingWaiting: Bool = false) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.isFinished = true
            if droppingWaiting { state.buffer = [] }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    func next() async -> Element? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
            let ready = state.withLock { state -> Element?? in
                if !state.buffer.isEmpty { return .some(state.buffer.removeFirst()) }
                if state.isFinished { return .some(nil) }
                precondition(state.waiter == nil, "\(consumer): only one task may iterate it")
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
