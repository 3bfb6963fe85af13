/// How one handler's failed runs are retried (``DurableTimers/register(_:payload:timeout:retry:maxConcurrentRuns:lease:_:)``);
/// handlers registered without one follow the runner's ``DurableTimers/Options``.
///
/// The wait before attempt *n + 1* is `delay × 2^(n−1)`, at most `maxDelay`, spread by `jitter`:
/// a fraction of the wait added or taken away, the same for the same key and attempt on every
/// instance (so a fleet agrees, and a test is exact), different across keys (so timers that failed
/// together do not retry together).
///
/// ```swift
/// try await timers.register("invoice.send", payload: Invoice.self,
///                           retry: DurableRetryPolicy(maxAttempts: 10, delay: .seconds(5), maxDelay: .seconds(3600), jitter: 0.2)) { … }
/// ```
public struct DurableRetryPolicy: Sendable, Hashable {
    /// Attempts at one occurrence before the timer is parked as failed (at least 1).
    public var maxAttempts: Int
    /// The wait before the second attempt; it doubles with each attempt after.
    public var delay: Duration
    /// The longest wait between attempts.
    public var maxDelay: Duration
    /// The share of each wait spread at random around it, from 0 (none) to 1 (from none to twice).
    ///
    /// A value set is clamped to 0…1; NaN and infinities are 0.
    public var jitter: Double {
        get { clampedJitter }
        set { clampedJitter = Self.clamp(newValue) }
    }

    private var clampedJitter: Double

    /// A policy; `jitter` is clamped to 0…1.
    public init(maxAttempts: Int = 5, delay: Duration = .seconds(1), maxDelay: Duration = .seconds(300), jitter: Double = 0) {
        self.maxAttempts = maxAttempts
        self.delay = delay
        self.maxDelay = maxDelay
        self.clampedJitter = Self.clamp(jitter)
    }

    private static func clamp(_ jitter: Double) -> Double {
        jitter.isFinite ? min(max(jitter, 0), 1) : 0
    }
}
