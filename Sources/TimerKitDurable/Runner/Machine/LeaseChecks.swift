/// Looks at claims other runners hold: when a claim round finds a key held elsewhere, the backlog
/// is swept again once that claim's lease ends, in case its runner died — one look a second at
/// most, however many keys were found held, instead of one claim per key at its lease's end
/// (which, with instances racing for every key, was a second failed claim per fire).
struct LeaseChecks: Sendable, Equatable {
    /// The instants armed: whole seconds, store time.
    private(set) var armed: Set<Int64> = []

    /// A claim held elsewhere ends at `until`: the instant to arm a check at (the first whole
    /// second after it), or `nil` if one is armed then already.
    mutating func arm(after until: Int64) -> Int64? {
        let second: Int64 = 1_000_000_000
        let instant = until.addingSaturating(second - 1) / second * second
        return armed.insert(instant).inserted ? instant : nil
    }

    /// The check armed at `instant` came.
    mutating func came(at instant: Int64) {
        armed.remove(instant)
    }
}
