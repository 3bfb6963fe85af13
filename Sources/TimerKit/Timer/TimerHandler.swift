import Dispatch

/// The code a timer or tool runs at each event, with its isolation and its owner: the one handler
/// shape that every TimerKit tool takes.
///
/// Each tool hands its handler two things: the subject (the ``ScheduledTimer``, ``Countdown``,
/// ``FrameClock`` or ``Debouncer`` itself, or the key of a ``TimerRegistry``) and the event (a
/// ``TimerFire``, a ``Countdown/Tick``, a ``FrameClock/Frame``, a debounced value). A plain closure
/// is the common case, and every tool takes one as its trailing closure. The other three cases are
/// values of this type, built the same way for every tool:
///
/// | You need | Write |
/// |---|---|
/// | code that runs where the delivery says | `{ subject, event in … }` |
/// | code that calls back into an object, without keeping it alive (C11) | `.bound(to: self) { owner, subject, event in … }` |
/// | code on the main actor (C15) | `.onMainActor { subject, event in … }` |
/// | both: a view model's or a view controller's timer | `.onMainActor(bound: self) { owner, subject, event in … }` |
///
/// ```swift
/// @MainActor final class VerificationViewModel {
///     private(set) var label = ""
///     private var countdown: Countdown?
///
///     func codeSent() throws {
///         countdown = try Countdown.start(to: .after(.seconds(60)), .onMainActor(bound: self) { model, _, tick in
///             model.label = tick.isFinished ? "Resend code" : "Resend in \(tick.value) s"
///         })
///     }
/// }
/// ```
///
/// **Owner-bound handlers** hold the owner weakly. At the first event after the owner is gone, the
/// tool ends — the timer is invalidated, the countdown or debouncer cancelled, the frame clock
/// invalidated, the registry's key cancelled — without calling the handler. Store the tool in a
/// property of the owner: when the owner goes, its tools go with it.
///
/// **Main-actor handlers** are delivered on the main queue, so they run in every run-loop mode —
/// also while a scroll view tracks. On Linux the main queue must be serviced (`dispatchMain()`, a
/// running `RunLoop.main`, or Swift concurrency's main executor). Give them no other delivery: a
/// tool that is asked to deliver a main-actor handler to another queue, or to the engine thread,
/// throws ``TimerError/conflictingDelivery(_:)``.
///
/// Why a value rather than a closure whose type carries its isolation (`@isolated(any)`,
/// SE-0431): Swift can call an `@isolated(any)` function only with `await`, so every fire of a
/// plain handler would start a task — an order of magnitude more than the plain call — and
/// `Task.immediate`, the only way to start one synchronously, needs macOS 26. A
/// `TimerHandler` decides the isolation once, when it is made, and each event is a plain call.
public struct TimerHandler<Subject: Sendable, Event: Sendable>: Sendable {
    /// Runs the handler; the third argument ends the tool when the owner is gone.
    typealias Body = @Sendable (Subject, Event, _ endOwnerless: () -> Void) -> Void

    /// The closure to call directly when the handler has no owner to check.
    private let plain: (@Sendable (Subject, Event) -> Void)?
    private let body: Body
    /// Whether the handler must run on the main actor.
    let isMainActor: Bool

    private init(plain: (@Sendable (Subject, Event) -> Void)?, isMainActor: Bool, body: @escaping Body) {
        self.plain = plain
        self.isMainActor = isMainActor
        self.body = body
    }

    /// A handler that runs where the tool's delivery says: the engine thread by default, or a
    /// queue.
    public init(_ handler: @escaping @Sendable (Subject, Event) -> Void) {
        self.init(plain: handler, isMainActor: false) { subject, event, _ in handler(subject, event) }
    }

    /// A handler bound to an owner, held weakly (C11): the form to use whenever the code calls back
    /// into an object. It receives the owner, the subject and the event; once the owner is gone,
    /// the tool ends at its next event without calling it.
    public static func bound<Owner: AnyObject & Sendable>(
        to owner: Owner,
        _ handler: @escaping @Sendable (Owner, Subject, Event) -> Void
    ) -> TimerHandler {
        TimerHandler(plain: nil, isMainActor: false) { [weak owner] subject, event, endOwnerless in
            guard let owner else { return endOwnerless() }
            handler(owner, subject, event)
        }
    }

    /// A handler that runs on the main actor (C15), delivered on the main queue.
    public static func onMainActor(_ handler: @escaping @MainActor (Subject, Event) -> Void) -> TimerHandler {
        TimerHandler(plain: nil, isMainActor: true) { subject, event, _ in
            MainActor.assumeIsolated { handler(subject, event) }
        }
    }

    /// A handler that runs on the main actor (C15) and is bound to an owner, held weakly (C11):
    /// the form for a view model or a view controller that keeps a timer in a property.
    public static func onMainActor<Owner: AnyObject & Sendable>(
        bound owner: Owner,
        _ handler: @escaping @MainActor (Owner, Subject, Event) -> Void
    ) -> TimerHandler {
        TimerHandler(plain: nil, isMainActor: true) { [weak owner] subject, event, endOwnerless in
            guard let owner else { return endOwnerless() }
            MainActor.assumeIsolated { handler(owner, subject, event) }
        }
    }

    /// Where the handler runs: the delivery asked for, or `otherwise` when none was; the main queue
    /// for a main-actor handler.
    func delivery(_ requested: TimerDelivery?, otherwise: TimerDelivery) throws(TimerError) -> TimerDelivery {
        guard isMainActor else { return requested ?? otherwise }
        let main = TimerDelivery.queue(.main)
        if let requested, requested != main { throw .conflictingDelivery(requested) }
        return main
    }

    /// The closure a tool calls at each event; `end` ends the tool when the owner is gone.
    func closure(endingWith end: @escaping @Sendable (Subject) -> Void) -> @Sendable (Subject, Event) -> Void {
        if let plain { return plain }
        let body = body
        return { subject, event in body(subject, event) { end(subject) } }
    }

    /// Runs the handler once; `end` ends the tool when the owner is gone.
    func callAsFunction(_ subject: Subject, _ event: Event, endingWith end: () -> Void) {
        body(subject, event, end)
    }
}
