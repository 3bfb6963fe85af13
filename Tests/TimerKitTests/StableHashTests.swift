import Testing

@testable import TimerKit

/// The hashes a fleet's processes must agree on give the same values in every release: a change
/// here would make a mixed fleet disagree on jitter and notification channels.
@Suite("Stable hashes")
struct StableHashTests {
    @Test("FNV-1a gives the published 64-bit values, and continues from a given hash")
    func fnv1a() {
        #expect(StableHash.fnv1a([]) == 0xCBF2_9CE4_8422_2325)
        #expect(StableHash.fnv1a(Array("a".utf8)) == 0xAF63_DC4C_8601_EC8C)
        #expect(StableHash.fnv1a("shop".utf8) == 0x46DC_5E18_E28E_2409)
        #expect(StableHash.fnv1a("op".utf8, from: StableHash.fnv1a("sh".utf8)) == StableHash.fnv1a("shop".utf8))
    }

    @Test("SplitMix64 stepped by the golden ratio from seed 0 gives the reference generator's first outputs")
    func splitMix() {
        var state: UInt64 = 0
        let outputs = (0..<3).map { _ in
            state &+= StableHash.golden
            return StableHash.mix(state)
        }
        #expect(outputs == [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F])
    }
}
