/// How late a system clock's driver wakes after the instant it was armed for, as its engine learns
/// it — a decaying maximum — and what the engine derives from it: how far into a tolerance window
/// it aims (C3), how long before a high-precision deadline it wakes (C2), and how soon a next
/// deadline must come for a wake-up to wait for it actively rather than sleep again.
struct WakeUpLatency: Equatable {
    /// The estimate, in nanoseconds. Starts at 100 µs, a thread's wake-up on an idle machine, so
    /// that the first fires aim right too.
    private(set) var nanoseconds: Int64

    init(nanoseconds: Int64 = 100_000) {
        self.nanoseconds = nanoseconds
    }

    /// Learns from one wake-up at `now` of a driver armed for `armed`. Returns whether the
    /// estimate changed.
    @inline(__always)
    mutating func record(wokeAt now: Int64, armedFor armed: Int64) -> Bool {
        // An engine armed for 1 was asked to wake at once (a yield, a shutdown), not for a deadline.
        guard armed > 1, armed != .max, now >= armed else { return false }
        // Capped, so that waking from a machine's sleep does not make the engine distrust its
        // windows for long; the estimate decays by 1/16 per wake-up.
        let sample = min(now - armed, 50_000_000)
        let updated = max(sample, nanoseconds - nanoseconds >> 4)
        defer { nanoseconds = updated }
        return updated != nanoseconds
    }

    /// How far into a tolerance window the engine aims (C3): the window less what it keeps back for
    /// its own wake-up latency — twice the estimate, and at least 50 µs — so that a fire lands
    /// inside the window, not just after its end. Windows still overlap and share wake-ups: the
    /// store takes every entry whose deadline has come at a wake-up.
    @inline(__always)
    func aimedSlack(_ tolerance: Int64) -> Int64 {
        guard tolerance > 0 else { return 0 }
        return max(0, tolerance - (2 * nanoseconds + 50_000))
    }

    /// How long before a high-precision deadline the driver wakes: one and a half times the
    /// estimate plus 30 µs — at least 100 µs, at most 5 ms (after a machine's sleep, say, the
    /// estimate is briefly large; the cap bounds the CPU time a spin can take). Chosen by
    /// measurement against a smaller lead: Benchmarks/results/HISTORY.md, "Precision beyond the floor".
    @inline(__always)
    var spinLead: Int64 {
        min(max(nanoseconds + nanoseconds >> 1 + 30_000, 100_000), 5_000_000)
    }

    /// How soon a next deadline must come for a wake-up to wait for it actively rather than re-arm
    /// the driver and sleep: half the estimate, at most 50 µs. A sleep that short would wake late
    /// anyway, and its two system calls cost more than the wait; under a dense stream of deadlines
    /// (a million timers due over seconds, one every few microseconds) re-arming the timer file
    /// was a quarter of the engine thread's time.
    @inline(__always)
    var nearWindow: Int64 {
        min(nanoseconds / 2, 50_000)
    }
}

/// How long the deliveries of one wake-up take, as a system clock's engine learns it: a decaying
/// maximum, capped. A wake-up takes every entry whose deadline has come and delivers them in
/// deadline order; under a dense stream of timers with tolerances (a million over two seconds, a
/// millisecond each) a batch takes hundreds of microseconds, and the driver, woken at the end of
/// the first window, delivered the batch's last fires after theirs. So the driver wakes this much
/// before an entry's key — never before its deadline — and the batch ends inside the windows (C3).
/// Timers without a tolerance are unaffected: their key is their deadline.
struct DeliveryReserve: Equatable {
    /// The estimate, in nanoseconds.
    private(set) var nanoseconds: Int64 = 0

    /// At most this much is reserved (a slow handler's run is not what a window can absorb).
    static let cap: Int64 = 5_000_000

    /// Learns from one wake-up whose deliveries took `duration` nanoseconds (0 for a wake-up that
    /// delivered one fire, which no other fire waited for); the estimate decays by 1/16 per wake-up
    /// that delivered something. The duration counts the handlers run on the engine thread, which
    /// the batch's later fires wait for too.
    @inline(__always)
    mutating func record(_ duration: Int64) {
        nanoseconds = max(min(duration, Self.cap), nanoseconds - nanoseconds >> 4)
    }
}
