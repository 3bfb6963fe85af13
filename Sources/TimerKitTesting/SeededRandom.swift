import TimerKit

/// A small deterministic generator (SplitMix64), so that a randomized test replays exactly from its
/// seed. For this package's tests; not API.
package struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= StableHash.golden
        return StableHash.mix(state)
    }
}
