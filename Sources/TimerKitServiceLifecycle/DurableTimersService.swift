import ServiceLifecycle
import TimerKitDurable

/// A ``DurableTimers`` runner as a swift-service-lifecycle `Service`: started with the server's
/// other services, and shut down gracefully with them — on SIGTERM, or whatever triggers the
/// `ServiceGroup`'s graceful shutdown.
///
/// ```swift
/// let timers = try DurableTimers(store: store, namespace: "shop")
/// try await timers.register("order.expire", payload: OrderID.self) { order, fire in … }
/// let group = ServiceGroup(
///     services: [postgresClient, DurableTimersService(timers), httpServer],
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// At graceful shutdown it calls ``DurableTimers/shutdown(gracePeriod:)``: nothing new is claimed,
/// the handlers under way finish (within `gracePeriod`) and their ends are written, and `run()`
/// returns once that is done. Cancelled instead (the group's cancellation, or its maximum graceful
/// shutdown duration passed), it shuts down with no grace: running handlers are cancelled at once,
/// and each gives its claim back when it ends by throwing.
///
/// A service wraps the runner rather than the runner conforming itself: ``DurableTimers/run()``
/// ends on cancellation, while a service must end on the group's graceful shutdown — a signal of
/// swift-service-lifecycle's own, which `TimerKitDurable` does not depend on (an app using durable
/// timers on SQLite links no swift-log or swift-async-algorithms for it).
public struct DurableTimersService: Service {
    /// The runner this service runs.
    public let timers: DurableTimers

    /// How long a graceful shutdown waits for the handlers under way.
    public let gracePeriod: Duration

    /// A service that runs `timers`.
    ///
    /// - Parameters:
    ///   - timers: The runner, with its handlers registered (registering more later is fine).
    ///   - gracePeriod: How long a graceful shutdown lets running handlers finish; 30 s by
    ///     default, within a typical orchestrator's termination grace.
    public init(_ timers: DurableTimers, gracePeriod: Duration = .seconds(30)) {
        self.timers = timers
        self.gracePeriod = gracePeriod
    }

    /// Starts the runner, then waits for the group's graceful shutdown (or cancellation) and shuts
    /// the runner down.
    public func run() async throws {
        let (timers, gracePeriod) = (timers, gracePeriod)
        // A runner still waiting for its database when the shutdown comes stops waiting.
        await withGracefulShutdownHandler {
            await timers.start()
        } onGracefulShutdown: {
            Task { await timers.shutdown(gracePeriod: gracePeriod) }
        }
        let isGraceful: Bool
        do {
            try await gracefulShutdown()
            isGraceful = true
        } catch {
            isGraceful = false
        }
        await timers.shutdown(gracePeriod: isGraceful ? gracePeriod : .zero)
    }
}
