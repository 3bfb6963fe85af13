/// Hashes that give the same value on every machine, in every process and every release: what the
/// processes of a fleet must agree on — a retry's jitter, a calendar schedule's jitter, the channel
/// a namespace's notifications go on. Swift's `Hasher` is seeded per process, so it cannot serve.
///
/// Changing either function changes what running fleets compute: a mixed fleet would disagree.
/// `StableHashTests` pins their values.
package enum StableHash {
    /// FNV-1a's offset basis: the hash of no bytes.
    package static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325

    /// SplitMix64's increment (2⁶⁴ divided by the golden ratio): the step of its state.
    package static let golden: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The 64-bit FNV-1a hash of `bytes`, continuing from `hash`.
    package static func fnv1a(_ bytes: some Sequence<UInt8>, from hash: UInt64 = offsetBasis) -> UInt64 {
        var hash = hash
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }

    /// SplitMix64's output function: every bit of `value` reaches every bit of the result.
    package static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
