import Dispatch
import Testing

@testable import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a pending timer costs in memory (issue 21): the engine holds millions of them (C16), so
/// their layout is part of the design, and a field added in passing must not push the object into
/// the allocator's next size class unnoticed.
@Suite("Footprint")
struct FootprintTests {
    /// The bytes the allocator reserved for an object (at least its instance size).
    private func allocatedBytes(_ object: AnyObject) -> Int {
        let address = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        #if canImport(Glibc)
        // `malloc_usable_size` is in <malloc.h>, which the Glibc module leaves out.
        typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int
        let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_usable_size")
        return unsafeBitCast(symbol, to: UsableSize.self)(address)
        #elseif canImport(Darwin)
        return malloc_size(address)
        #endif
    }

    @Test("C16: a store entry is 48 bytes, and a pending timer's object 104 (the allocator's 112-byte class), whatever its delivery, tolerance or hook")
    func pendingTimerFootprint() throws {
        #expect(MemoryLayout<TimerEntry>.stride == 48)
        let clock = TimerClock.dedicated(.continuous)
        defer { clock.shutdown() }
        let plain = try ScheduledTimer.repeating(every: .seconds(60), clock: clock) { _, _ in }
        let queued = try ScheduledTimer.repeating(every: .seconds(60), clock: clock, delivery: .queue(DispatchQueue(label: "footprint"))) { _, _ in }
        let tolerant = try ScheduledTimer.repeating(every: .seconds(60), tolerance: .seconds(10), clock: clock) { _, _ in }
        let precise = try ScheduledTimer.repeating(every: .seconds(60), precision: .high, clock: clock) { _, _ in }
        let hookCalls = Counter()
        let hooked = try ScheduledTimer.make(
            interval: .seconds(60), first: nil, tolerance: .zero, clock: clock, policy: .coalesce, delivery: .engineThread,
            onInvalidate: { hookCalls.increment() }, handler: { _, _ in })
        for timer in [plain, queued, tolerant, precise, hooked] {
            #if canImport(Glibc)
            // glibc hands out the instance size rounded up to its class less its 8-byte header
            // (AddressSanitizer's allocator: the size asked for), so 104 either way.
            #expect(allocatedBytes(timer) == 104)
            #else
            #expect(allocatedBytes(timer) <= 112)
            #endif
            #expect(timer.isValid)
        }
        #expect(tolerant.tolerance == .seconds(10))
        #expect(precise.precision == .high)
        #expect(plain.precision == .standard)
        hooked.invalidate()
        hooked.invalidate()
        #expect(hookCalls.current == 1)
    }
}
