import Dispatch

// Over 400 lines, on purpose: the ring, the heap and the wheel share invariants (which level holds
// an entry, the cursor, the counts) that Swift's file-scoped `private` keeps out of every other
// file's reach; its tests are TimerStoreTests.

/// The data structure that holds an engine's pending deadlines (C16): a ring of one-tick buckets
/// and a small exact 4-ary heap for the next few seconds, behind a hierarchical timing wheel for
/// everything later.
///
/// Entries are ordered by key — the latest instant an entry may fire at, its deadline plus its
/// tolerance — then by creation order. Every method is called under the lock of the shard that owns
/// the store (``EngineShard``).
///
/// ## How it works
///
/// Time is cut into ticks of 2²⁰ ns (about 1 ms). The *horizon* is a tick: every entry whose key
/// falls in an earlier tick is in the **near set**, and every other entry is in the **wheel**:
/// 8 levels of 64 buckets, level `L` covering 64^(L+1) ticks, with a 64-bit occupancy bitmap per
/// level. An entry goes to the level of the highest base-64 digit in which its tick differs from
/// the horizon, into the bucket named by that digit, at the tail of a doubly linked list threaded
/// through the entries themselves. So:
///
/// - inserting into the wheel and cancelling from it are O(1), with no allocation (entries live in
///   a paged ``TimerSlab``); moving a wheel entry within its bucket's range (a reset idle timeout,
///   pushed back by the time since its last reset) only changes its deadline (``move(_:deadline:slack:)``);
/// - every entry of a lower level comes before every entry of a higher level, so the earliest
///   bucket is the lowest set bit of the lowest non-zero bitmap: no scan;
/// - when the earliest bucket comes within ``lookahead`` ticks (about 4.3 s) of now, it is
///   *opened*: a level-0 bucket (one tick) goes into the near set and the horizon moves past it; a
///   higher bucket cascades down the levels. Each entry moves at most once per level, so the
///   amortized cost is O(1) per entry.
///
/// The near set is the **ring** — ``ringSize`` one-tick buckets (about 8.6 s), a tick's entries
/// in slot `tick % ringSize`, linked the same way, with a bitmap and summary words over it; its
/// tables, 65 KB, are allocated with the store's first ring entry — and
/// the **near heap**, exactly ordered. A near entry goes into its tick's slot, in O(1), unless its
/// tick lies outside the ring's span (before the ring's base, or a ring's length past it); then it
/// goes into the heap. Before the store tells its first entry, it opens ring ticks into the heap
/// until the heap's first entry lies in an earlier tick than everything left in the ring
/// (``openRingWhileAhead()``), and each entry popped moves two of the next tick's ahead of need
/// (``openRingAhead(_:)``). So the heap holds the ticks being fired now — hundreds of entries
/// where a million timers are due over seconds, instead of the million — and a sift touches a few
/// cache lines instead of walking a 16 MB array (Benchmarks/results/issue21.md, "A near ring").
///
/// So the near set holds the next few seconds, where deadlines come due and order matters, and the
/// wheel holds the far future — the idle timeouts and deadlines that are mostly cancelled before
/// they come near. The split was chosen by measurement (Benchmarks/results/HISTORY.md, "The store"): with a lookahead of
/// one tick's worth of buckets (64 ms), a million timers due within seconds made the wheel cascade
/// tens of thousands of entries at once, stalling fires by milliseconds, while the heap alone fired
/// them within a fraction of a millisecond; and for timers seconds ahead, cancelled before they
/// come near, the wheel is O(1) whatever is pending. The ring needs no cascade: a ring tick is
/// opened in one step, and holds one tick's entries.
///
/// Buckets are opened when the engine computes its next wake-up (``wakeUpTime(now:reserve:)``, which also
/// wakes it when the next bucket comes within the lookahead), and on demand when the near set runs
/// dry (each bucket keeps a lower bound of its deadlines, so one holding a due deadline is opened in
/// time). The heap decides the exact order, so grouping entries in buckets and slots never makes a
/// fire early (C2) or later than its key (C3), and the store pops exactly the entries the heap
/// alone would, in the same order.
///
/// Why this file is longer than the others (about 700 lines): the heap, the ring and the wheel
/// share one slab, one horizon and the entries' links, and every method keeps their joint
/// invariants — kept private in one file, so that nothing else can break them.
/// `TimerStore+Invariants.swift` states and checks them.
///
/// With ``Layout/heap`` the ring and the wheel are off and every entry goes into the heap
/// (O(log n)); the benchmark races the two layouts.
struct TimerStore {
    /// Where a scheduled callback stands.
    enum CallbackState {
        /// Waiting for its deadline, or due and on its way to its run: it can still be cancelled.
        case pending
        /// Its run has begun and not yet ended.
        case running
        /// It ran, was cancelled, or the handle names an entry that has moved on.
        case gone
    }

    /// What ``takeFirst(dueBy:)`` hands out.
    enum DueWork: Sendable {
        case timer(ScheduledTimer)
        case callback(CallbackTicket)
    }

    /// Which structure holds the far future.
    enum Layout: Sendable {
        /// The timing wheel in front of the near heap (the default).
        case wheel
        /// The heap alone.
        case heap
    }

    static let tickShift: Int64 = 20
    static let levelBits = 6
    static let levelCount = 8
    static let bucketsPerLevel = 1 << levelBits
    /// How far ahead of now, in ticks, buckets are opened when the near set has run dry.
    static let nearWindow: Int64 = 64
    /// How far ahead of now, in ticks, the near set (the heap and the ring) holds every entry:
    /// 4,096 ticks, about 4.3 s.
    static let lookahead: Int64 = 4_096
    /// The near ring's size in ticks: 8,192, about 8.6 s — twice the lookahead, so that every near
    /// entry fits in it while the ring's base lags now by up to the lookahead.
    static let ringBits = 13
    static let ringSize = 1 << ringBits
    /// The ring's buckets follow the wheel's in the bucket tables: ring slot `s` is bucket
    /// `ringFirstBucket + s`, and its occupancy bit is in word `ringFirstBucket / 64 + s / 64`.
    static let ringFirstBucket = levelCount * bucketsPerLevel

    let layout: Layout
    private(set) var slab = TimerSlab()
    /// The near heap's entries in 4-ary heap order by (key, sequence), each with its key and
    /// sequence beside its index: a sift compares siblings that sit side by side in memory instead
    /// of reading four entries scattered over the slab (measured with a million timers: the sift
    /// was 42 % of the engine thread's time, nearly all of it cache misses on the slab).
    private(set) var heap: [HeapSlot] = []

    /// One place in the near heap: 16 bytes, four siblings to a cache line.
    struct HeapSlot {
        var key: Int64
        var sequence: UInt32
        var index: Int32

        /// Whether `self` comes before `other` in (key, creation) order; creation order compared
        /// with wrapping arithmetic (``TimerEntry/sequence``).
        @inline(__always)
        func precedes(_ other: HeapSlot) -> Bool {
            key < other.key || (key == other.key && Int32(bitPattern: sequence &- other.sequence) < 0)
        }
    }
    /// First tick that is not in the near set; every wheel entry's tick is at or after it.
    private(set) var horizon: Int64 = 0

    /// The first tick the near ring may hold: it holds near entries of the ticks from here to
    /// `ringSize` ticks later, each tick in slot `tick % ringSize`. It moves past a tick when the
    /// tick is opened, and up to now when the ring has nothing before now.
    private(set) var ringBase: Int64 = 0
    /// The entries in the ring.
    private(set) var ringCount = 0

    /// The bucket tables, indexed by bucket: the wheel's buckets, then — once the ring is first used
    /// (``hasRing``) — the ring's slots. Raw pointers held by value, which `tables` owns: no
    /// copy-on-write or exclusivity checks on the hot path. The store is never copied (it lives in
    /// its shard's locked state), so sharing the tables between copies cannot happen in practice.
    ///
    /// Each bucket's first and last entry, or -1.
    private(set) var heads: UnsafeMutablePointer<Int32>
    private(set) var tails: UnsafeMutablePointer<Int32>
    /// The occupancy bitmaps: one per wheel level, then the ring's words.
    private(set) var bitmaps: UnsafeMutablePointer<UInt64>
    /// One bit per ring word that is not zero.
    let ringSummary: UnsafeMutablePointer<UInt64>
    /// A lower bound of the deadlines in each wheel bucket (`Int64.max` when empty), so that a
    /// bucket whose keys are far off but whose deadlines have come (a long tolerance) is opened in
    /// time. (The ring needs none: its ticks are opened in key order, like the heap's.)
    let earliestDeadlines: UnsafeMutablePointer<Int64>
    /// Whether the ring's part of the tables is allocated: on the first entry the ring takes, so
    /// that a store that never holds a near entry, as most of a clock's shards, costs the wheel's
    /// 8 KB and not 73 (the ring's part is 65 KB).
    private(set) var hasRing = false
    private let tables: BucketTables

    /// Owns the bucket tables: allocates them, grows them for the ring, and frees them.
    final class BucketTables {
        /// The wheel's buckets.
        static let wheelBucketCount = TimerStore.ringFirstBucket
        /// The wheel's buckets, then the ring's.
        static let bucketCount = wheelBucketCount + TimerStore.ringSize
        static let ringSummaryCount = TimerStore.ringSize / 64 / 64
        private(set) var heads = BucketTables.filled(-1 as Int32, count: wheelBucketCount)
        private(set) var tails = BucketTables.filled(-1 as Int32, count: wheelBucketCount)
        private(set) var bitmaps = BucketTables.filled(0 as UInt64, count: TimerStore.levelCount)
        let ringSummary = BucketTables.filled(0 as UInt64, count: ringSummaryCount)
        let earliestDeadlines = BucketTables.filled(Int64.max, count: wheelBucketCount)

        private static func filled<Element>(_ value: Element, count: Int) -> UnsafeMutablePointer<Element> {
            let tables = UnsafeMutablePointer<Element>.allocate(capacity: count)
            tables.initialize(repeating: value, count: count)
            return tables
        }

        /// Grows the heads, tails and bitmaps to hold the ring's slots after the wheel's buckets.
        func addRing() {
            heads = Self.grown(heads, from: Self.wheelBucketCount, to: Self.bucketCount, filling: -1)
            tails = Self.grown(tails, from: Self.wheelBucketCount, to: Self.bucketCount, filling: -1)
            bitmaps = Self.grown(bitmaps, from: TimerStore.levelCount, to: Self.bucketCount / 64, filling: 0)
        }

        private static func grown<Element>(
            _ old: UnsafeMutablePointer<Element>, from oldCount: Int, to count: Int, filling value: Element
        ) -> UnsafeMutablePointer<Element> {
            let new = UnsafeMutablePointer<Element>.allocate(capacity: count)
            new.moveInitialize(from: old, count: oldCount)
            (new + oldCount).initialize(repeating: value, count: count - oldCount)
            old.deallocate()
            return new
        }

        deinit {
            heads.deallocate()
            tails.deallocate()
            bitmaps.deallocate()
            ringSummary.deallocate()
            earliestDeadlines.deallocate()
        }
    }

    /// Creates an empty store whose near set holds the `lookahead` ticks after `now`.
    init(layout: Layout = .wheel, now: Int64 = 0) {
        self.layout = layout
        ringBase = now >> Self.tickShift
        horizon = max(0, ringBase + Self.lookahead)
        tables = BucketTables()
        heads = tables.heads
        tails = tables.tails
        bitmaps = tables.bitmaps
        ringSummary = tables.ringSummary
        earliestDeadlines = tables.earliestDeadlines
    }

    /// Allocates the ring's part of the bucket tables.
    private mutating func addRing() {
        tables.addRing()
        heads = tables.heads
        tails = tables.tails
        bitmaps = tables.bitmaps
        hasRing = true
    }

    /// The number of entries waiting for their deadline (not those being delivered).
    var count: Int { slab.count - deliveringCount }

    /// Callbacks taken out by ``takeFirst(dueBy:)`` whose entries are not yet released.
    private var deliveringCount = 0

    /// The key of the entry at `index`, which must be in use.
    @inline(__always)
    func key(at index: Int32) -> Int64 { slab[index].pointee.key }

    /// Where the callback created with `sequence` at `index` stands (a timer's entry, or a later
    /// tenant of the same entry, is ``CallbackState/gone``).
    func callbackState(_ index: Int32, sequence: UInt32) -> CallbackState {
        guard index >= 0, slab.isAllocated(index) else { return .gone }
        let entry = slab[index]
        guard entry.pointee.sequence == sequence else { return .gone }
        let place = CallbackTicket.place(of: entry)
        switch place {
        case TimerEntry.delivering: return .pending
        case TimerEntry.claimed: return .running
        case TimerEntry.withdrawn, TimerEntry.unplaced: return .gone
        default:
            switch entry.pointee.work {
            case .callback, .queued: return .pending
            case .timer, .none: return .gone
            }
        }
    }

    /// Cancels the callback created with `sequence` at `index` if its run has not begun: takes it
    /// out of the store, or withdraws it from its delivery. Returns what it held, for the caller to
    /// release outside the lock, or `nil` when there was nothing to cancel.
    mutating func cancelCallback(_ index: Int32, sequence: UInt32) -> TimerWork? {
        guard index >= 0, slab.isAllocated(index) else { return nil }
        let entry = slab[index]
        guard entry.pointee.sequence == sequence else { return nil }
        let place = CallbackTicket.place(of: entry)
        if place == TimerEntry.delivering { return CallbackTicket.withdraw(entry) }
        guard TimerEntry.isStored(place) else { return nil }
        switch entry.pointee.work {
        case .callback, .queued: return remove(index)
        case .timer, .none: return nil
        }
    }

    /// Moves the callback created with `sequence` at `index` to a new deadline, in place, if it is
    /// still in the store (not due and handed to its delivery, not run, not cancelled): the same
    /// entry, its tolerance and creation order kept. Returns its new key, or `nil` when it could
    /// not be moved.
    mutating func moveCallback(_ index: Int32, sequence: UInt32, deadline: Int64) -> Int64? {
        guard index >= 0, slab.isAllocated(index) else { return nil }
        let entry = slab[index]
        guard entry.pointee.sequence == sequence, TimerEntry.isStored(CallbackTicket.place(of: entry)) else { return nil }
        switch entry.pointee.work {
        case .callback, .queued:
            move(index, deadline: deadline, slack: Int64(entry.pointee.slack))
            return entry.pointee.key
        case .timer, .none:
            return nil
        }
    }

    /// Frees the entry of a callback taken out with ``takeFirst(dueBy:)`` once its delivery is over
    /// (it ran, or was withdrawn).
    mutating func releaseDelivered(_ index: Int32) {
        deliveringCount -= 1
        _ = slab.free(index)
    }

    // MARK: Inserting and removing

    /// Adds an entry; returns its index, which stays valid until the entry is removed.
    ///
    /// - Parameters:
    ///   - slack: the tolerance, clamped to `0...UInt32.max` and so that the key does not overflow.
    mutating func insert(_ work: consuming TimerWork, deadline: Int64, slack: Int64, sequence: UInt32) -> Int32 {
        let index = slab.allocate()
        let entry = slab[index]
        // A free entry holds `.none`, which owns nothing: initialize over it instead of assigning.
        entry.pointer(to: \.work)!.initialize(to: work)
        entry.pointee.deadline = deadline
        entry.pointee.slack = Self.clampedSlack(slack, deadline: deadline)
        entry.pointee.sequence = sequence
        place(index)
        return index
    }

    /// Moves a stored entry to a new deadline in place: the same index, work and creation order,
    /// nothing freed or allocated (a timer's `reschedule`, a callback's).
    ///
    /// A wheel entry whose new key falls in the range of the bucket it is in stays there, and only
    /// its deadline changes: the bucket is where placing it anew would put it, so the wheel stays
    /// exact. An idle timeout pushed back by the time since its last reset mostly stays in its
    /// bucket (one 30 s ahead sits in a bucket 4.3 s wide), so its reset touches one entry instead of
    /// unlinking it from its neighbours and linking it to a bucket's tail. (Leaving an entry moved
    /// past its bucket's range where it is would be cheaper still, but a bucket holding only such
    /// entries would hide a later bucket's due entry from ``takeFirst(dueBy:)`` until the next
    /// wake-up computation.) A heap entry that stays in the heap is sifted from where it is.
    mutating func move(_ index: Int32, deadline: Int64, slack: Int64) {
        let entry = slab[index]
        let newSlack = Self.clampedSlack(slack, deadline: deadline)
        let newKey = deadline &+ Int64(newSlack)
        let place = entry.pointee.place
        if place <= -2, isInRange(newKey >> Self.tickShift, ofBucket: Int(-2 - place)) {
            let bucket = Int(-2 - place)
            entry.pointee.deadline = deadline
            entry.pointee.slack = newSlack
            if bucket < Self.ringFirstBucket { earliestDeadlines[bucket] = min(earliestDeadlines[bucket], deadline) }
            return
        }
        if place >= 0, layout == .heap || newKey >> Self.tickShift < horizon {
            let position = Int(place)
            entry.pointee.deadline = deadline
            entry.pointee.slack = newSlack
            let old = heap[position]
            heap[position].key = newKey
            if heap[position].precedes(old) { siftUp(position) } else { siftDown(position) }
            return
        }
        unplace(index)
        entry.pointee.deadline = deadline
        entry.pointee.slack = newSlack
        self.place(index)
    }

    /// The tolerance clamped to `0...UInt32.max` and so that the key does not overflow.
    @inline(__always)
    private static func clampedSlack(_ slack: Int64, deadline: Int64) -> UInt32 {
        let room = deadline < 0 ? Int64(UInt32.max) : Int64.max - deadline
        return UInt32(clamping: min(max(slack, 0), room))
    }

    /// Removes the entry at `index` and returns what it held.
    mutating func remove(_ index: Int32) -> TimerWork {
        unplace(index)
        return slab.free(index)
    }

    /// Removes and returns the first entry, in (key, creation) order, if its deadline has come by
    /// `now`. `Int64.max` is the end of time: a deadline there never comes (C17).
    mutating func removeFirst(dueBy now: Int64) -> (work: TimerWork, deadline: Int64)? {
        guard let (index, deadline) = popFirst(dueBy: now) else { return nil }
        return (slab.free(index), deadline)
    }

    /// Takes out the first entry, in (key, creation) order, if its deadline has come by `now`, for
    /// delivery: a timer's entry is freed, a callback's stays allocated in the
    /// ``TimerEntry/delivering`` state until ``releaseDelivered(_:)``, so that it can be cancelled
    /// until its run begins (C8).
    mutating func takeFirst(dueBy now: Int64) -> (due: DueWork, deadline: Int64)? {
        guard let (index, deadline) = popFirst(dueBy: now) else { return nil }
        let entry = slab[index]
        let queue: DispatchQueue?
        switch entry.pointee.work {
        case .timer:
            guard case .timer(let timer) = slab.free(index) else { preconditionFailure() }
            return (.timer(timer), deadline)
        case .callback: queue = nil
        case .queued(let queued): queue = queued.queue
        case .none: preconditionFailure("TimerStore: a free entry was stored")
        }
        entry.pointee.place = TimerEntry.delivering
        deliveringCount += 1
        return (.callback(CallbackTicket(index: index, entry: entry, queue: queue)), deadline)
    }

    /// Unplaces the first entry if its deadline has come by `now`; it stays allocated.
    private mutating func popFirst(dueBy now: Int64) -> (index: Int32, deadline: Int64)? {
        while true {
            let ringTick = openRingWhileAhead()
            if let top = heap.first?.index {
                let deadline = slab[top].pointee.deadline
                guard deadline <= now && deadline != .max else { return nil }
                heapRemove(at: 0)
                // The ring is as it was: its first tick is the one just found.
                if let ringTick, ringTick < (now >> Self.tickShift) + 2 { openRingAhead(ringTick) }
                return (top, deadline)
            }
            // Open the first bucket if it is near, or if something in it may be due already: then
            // the wheel pops exactly what the heap alone would.
            guard let bucket = firstBucket(),
                bucket.start <= (now >> Self.tickShift) + Self.nearWindow
                    || earliestDeadlines[bucket.level * Self.bucketsPerLevel + bucket.digit] <= now
            else { return nil }
            open(bucket)
        }
    }

    /// Opens every bucket that has come within the lookahead, then tells when the driver should
    /// wake: at the first entry's key (less `reserve`, not before its deadline), or when the next
    /// bucket comes within the lookahead, whichever is earlier — always after `now`, once everything
    /// due by `now` was removed. `nil` when nothing is held.
    ///
    /// - Parameter reserve: wake this much before the first entry's key, but not before its
    ///   deadline: the time the delivery of a wake-up's batch takes (``DeliveryReserve``).
    mutating func wakeUpTime(now: Int64, reserve: Int64 = 0) -> Int64? {
        let nowTick = now >> Self.tickShift
        while let bucket = firstBucket(), bucket.start <= nowTick + Self.lookahead { open(bucket) }
        advanceRingBase(to: nowTick)
        openRingWhileAhead()
        let keyTime = heap.first.map { first in
            reserve > 0 && first.key != .max ? max(first.key - reserve, slab[first.index].pointee.deadline) : first.key
        }
        guard let bucket = firstBucket() else {
            // Empty: the horizon may catch up with now, so that new entries land on low levels.
            if keyTime == nil { horizon = max(horizon, nowTick + Self.lookahead) }
            return keyTime
        }
        return min(keyTime ?? .max, (bucket.start - Self.lookahead) << Self.tickShift)
    }

    /// The deadline of the first entry in (key, creation) order, found by opening as many buckets
    /// as it takes.
    mutating func firstDeadline() -> Int64? {
        while true {
            openRingWhileAhead()
            guard heap.isEmpty, let bucket = firstBucket() else { break }
            open(bucket)
        }
        return heap.first.map { slab[$0.index].pointee.deadline }
    }

    /// Removes every stored entry and withdraws every callback being delivered whose run has not
    /// begun; returns what they held (the withdrawn entries stay allocated until their deliverer
    /// releases them).
    mutating func removeAll() -> [TimerWork] {
        var works: [TimerWork] = []
        for index in slab.indicesInUse() {
            let entry = slab[index]
            if TimerEntry.isStored(CallbackTicket.place(of: entry)) {
                works.append(slab.free(index))
            } else if let work = CallbackTicket.withdraw(entry) {
                works.append(work)
            }
        }
        heap = []
        let bucketCount = hasRing ? BucketTables.bucketCount : BucketTables.wheelBucketCount
        for word in 0..<(bucketCount / 64) { bitmaps[word] = 0 }
        for word in 0..<BucketTables.ringSummaryCount { ringSummary[word] = 0 }
        for bucket in 0..<bucketCount {
            heads[bucket] = -1
            tails[bucket] = -1
        }
        for bucket in 0..<BucketTables.wheelBucketCount { earliestDeadlines[bucket] = .max }
        ringCount = 0
        return works
    }

    // MARK: Placing entries

    /// Puts an allocated entry in the near set (its tick is before the horizon) — its tick's ring
    /// slot, or the heap when the tick is outside the ring's span — or in its wheel bucket.
    private mutating func place(_ index: Int32) {
        let tick = slab[index].pointee.key >> Self.tickShift
        guard layout == .wheel else {
            heapInsert(index)
            return
        }
        guard tick >= horizon else {
            if tick >= ringBase && tick - ringBase < Int64(Self.ringSize) {
                if !hasRing { addRing() }
                link(index, to: Self.ringFirstBucket + Self.ringSlot(of: tick))
                ringCount += 1
            } else {
                heapInsert(index)
            }
            return
        }
        let differing = UInt64(bitPattern: tick ^ horizon)
        let level = differing == 0 ? 0 : (63 - differing.leadingZeroBitCount) / Self.levelBits
        let digit = Int(truncatingIfNeeded: tick >> Int64(level * Self.levelBits)) & (Self.bucketsPerLevel - 1)
        let bucket = level * Self.bucketsPerLevel + digit
        earliestDeadlines[bucket] = min(earliestDeadlines[bucket], slab[index].pointee.deadline)
        link(index, to: bucket)
    }

    /// The ring slot of a tick.
    @inline(__always)
    static func ringSlot(of tick: Int64) -> Int { Int(truncatingIfNeeded: tick) & (ringSize - 1) }

    /// Links an entry at the tail of a bucket's list (a wheel bucket or a ring slot) and marks the
    /// bucket occupied.
    @inline(__always)
    private mutating func link(_ index: Int32, to bucket: Int) {
        let entry = slab[index]
        entry.pointee.place = -2 - Int32(bucket)
        entry.pointee.next = -1
        entry.pointee.previous = tails[bucket]
        if tails[bucket] >= 0 {
            slab[tails[bucket]].pointee.next = index
        } else {
            heads[bucket] = index
            let word = bucket >> Self.levelBits
            if word >= Self.levelCount && bitmaps[word] == 0 {
                let ringWord = word - Self.levelCount
                ringSummary[ringWord >> 6] |= 1 << UInt64(ringWord & 63)
            }
            bitmaps[word] |= 1 << UInt64(bucket & (Self.bucketsPerLevel - 1))
        }
        tails[bucket] = index
    }

    /// Marks a bucket whose list was just emptied as empty.
    @inline(__always)
    private mutating func markEmpty(_ bucket: Int) {
        let word = bucket >> Self.levelBits
        bitmaps[word] &= ~(1 << UInt64(bucket & (Self.bucketsPerLevel - 1)))
        if word < Self.levelCount {
            earliestDeadlines[bucket] = .max
        } else if bitmaps[word] == 0 {
            let ringWord = word - Self.levelCount
            ringSummary[ringWord >> 6] &= ~(1 << UInt64(ringWord & 63))
        }
    }

    /// Takes an entry out of the heap or its bucket; it stays allocated.
    private mutating func unplace(_ index: Int32) {
        let entry = slab[index]
        let place = entry.pointee.place
        precondition(place != TimerEntry.unplaced, "TimerStore.remove: the entry is not in the store")
        if place >= 0 {
            heapRemove(at: Int(place))
            return
        }
        let bucket = Int(-2 - place)
        let next = entry.pointee.next
        let previous = entry.pointee.previous
        if previous >= 0 { slab[previous].pointee.next = next } else { heads[bucket] = next }
        if next >= 0 { slab[next].pointee.previous = previous } else { tails[bucket] = previous }
        if heads[bucket] < 0 { markEmpty(bucket) }
        if bucket >= Self.ringFirstBucket { ringCount -= 1 }
        entry.pointee.place = TimerEntry.unplaced
        entry.pointee.next = -1
        entry.pointee.previous = -1
    }

    /// The earliest non-empty bucket: the lowest set bit of the lowest non-zero bitmap.
    private func firstBucket() -> (level: Int, digit: Int, start: Int64)? {
        for level in 0..<Self.levelCount where bitmaps[level] != 0 {
            let digit = bitmaps[level].trailingZeroBitCount
            return (level, digit, bucketStart(level: level, digit: digit))
        }
        return nil
    }

    /// The first tick of a bucket: the horizon's digits above its level, its own digit at it.
    private func bucketStart(level: Int, digit: Int) -> Int64 {
        let shift = Int64(level * Self.levelBits)
        let above = shift + Int64(Self.levelBits)
        return ((horizon >> above) << above) | (Int64(digit) << shift)
    }

    /// Whether `tick` is one of the bucket's: where ``place(_:)`` would put an entry of that tick.
    @inline(__always)
    private func isInRange(_ tick: Int64, ofBucket bucket: Int) -> Bool {
        if bucket >= Self.ringFirstBucket {
            // The ring's span holds each slot's tick once, and the entry's old tick, in the same
            // slot, was before the horizon: so is this one.
            return tick >= ringBase && tick - ringBase < Int64(Self.ringSize) && Self.ringFirstBucket + Self.ringSlot(of: tick) == bucket
        }
        let level = bucket >> Self.levelBits
        let start = bucketStart(level: level, digit: bucket & (Self.bucketsPerLevel - 1))
        return tick >= start && tick - start < Int64(1) << Int64(level * Self.levelBits)
    }

    /// Empties a bucket: a level-0 bucket into the heap, a higher one down the levels; the horizon
    /// moves to the bucket's start (past it, for level 0).
    private mutating func open(_ bucket: (level: Int, digit: Int, start: Int64)) {
        horizon = bucket.level == 0 ? bucket.start + 1 : bucket.start
        redistribute(bucket.level * Self.bucketsPerLevel + bucket.digit)
        // Keep the order invariant: no level above 0 may hold an entry in the bucket the horizon is
        // in, or an entry there could precede a lower level's. Moving the horizon into a new block
        // can make such a bucket current; cascade it (highest level first).
        for level in stride(from: Self.levelCount - 1, through: 1, by: -1) {
            let digit = Int(truncatingIfNeeded: horizon >> Int64(level * Self.levelBits)) & (Self.bucketsPerLevel - 1)
            if bitmaps[level] & (1 << UInt64(digit)) != 0 {
                redistribute(level * Self.bucketsPerLevel + digit)
            }
        }
    }

    /// Re-places every entry of a bucket relative to the current horizon, in list order.
    private mutating func redistribute(_ bucket: Int) {
        var index = heads[bucket]
        heads[bucket] = -1
        tails[bucket] = -1
        markEmpty(bucket)
        while index >= 0 {
            let next = slab[index].pointee.next
            place(index)
            index = next
        }
    }

    // MARK: The near ring

    /// Opens ring ticks into the heap until the heap's first entry comes before every entry left in
    /// the ring: then the heap's first is the near set's first, exactly as if the heap held it all.
    /// A ring tick's entries all have keys in that tick, so the heap's first precedes them when its
    /// key falls in an earlier tick.
    ///
    /// Returns the ring's first tick left, or `nil` when the ring is empty.
    @inline(__always)
    @discardableResult
    private mutating func openRingWhileAhead() -> Int64? {
        while ringCount > 0 {
            let tick = firstRingTick()
            if let first = heap.first, first.key >> Self.tickShift < tick { return tick }
            openRing(tick)
        }
        return nil
    }

    /// Moves every entry of a ring tick into the heap; the ring's base moves past the tick.
    private mutating func openRing(_ tick: Int64) {
        let bucket = Self.ringFirstBucket + Self.ringSlot(of: tick)
        var index = heads[bucket]
        heads[bucket] = -1
        tails[bucket] = -1
        markEmpty(bucket)
        ringBase = tick + 1
        while index >= 0 {
            let next = slab[index].pointee.next
            heapInsert(index)
            ringCount -= 1
            index = next
        }
    }

    /// Moves the first two entries of the ring's first tick, `tick`, into the heap: called once per
    /// entry popped while that tick is at most one tick ahead of now, so that the ticks coming due
    /// move into the heap a few at a time, between fires, instead of all at once when the heap
    /// reaches them. (A tick of a million timers due over two seconds holds about 500 entries
    /// scattered over the slab; opening it at once delayed that tick's first fires by its cache
    /// misses, Benchmarks/results/issue21.md, "A near ring".) Any near entry may be in the heap, so
    /// this changes no order.
    private mutating func openRingAhead(_ tick: Int64) {
        let bucket = Self.ringFirstBucket + Self.ringSlot(of: tick)
        for _ in 0..<2 {
            let index = heads[bucket]
            let next = slab[index].pointee.next
            heads[bucket] = next
            ringCount -= 1
            heapInsert(index)
            guard next >= 0 else {
                tails[bucket] = -1
                markEmpty(bucket)
                ringBase = tick + 1
                return
            }
            slab[next].pointee.previous = -1
        }
    }

    /// Moves the ring's base up to `tick`, or to the ring's first tick if that is earlier: nothing
    /// in the ring lies between, so every entry keeps its slot, and the ring spans ticks further
    /// ahead for the entries to come.
    private mutating func advanceRingBase(to tick: Int64) {
        guard tick > ringBase else { return }
        ringBase = ringCount == 0 ? tick : min(tick, firstRingTick())
    }

    /// The first tick, from the ring's base on, whose slot holds entries. The ring must not be empty.
    private func firstRingTick() -> Int64 {
        let start = Self.ringSlot(of: ringBase)
        let slot = firstRingSlot(from: start) ?? firstRingSlot(from: 0)!
        return ringBase + Int64((slot - start) & (Self.ringSize - 1))
    }

    /// The first occupied ring slot at or after `start`, found through the summary bits: at most
    /// three words read.
    private func firstRingSlot(from start: Int) -> Int? {
        let ring = bitmaps + Self.levelCount
        var word = start >> 6
        let bits = ring[word] & (~UInt64(0) << UInt64(start & 63))
        if bits != 0 { return word << 6 | bits.trailingZeroBitCount }
        word += 1
        var summaryWord = word >> 6
        while summaryWord < BucketTables.ringSummaryCount {
            var summary = ringSummary[summaryWord]
            if summaryWord == word >> 6 { summary &= ~UInt64(0) << UInt64(word & 63) }
            if summary != 0 {
                let found = summaryWord << 6 | summary.trailingZeroBitCount
                return found << 6 | ring[found].trailingZeroBitCount
            }
            summaryWord += 1
        }
        return nil
    }

    // MARK: The near heap

    private mutating func heapInsert(_ index: Int32) {
        let entry = slab[index]
        heap.append(HeapSlot(key: entry.pointee.key, sequence: entry.pointee.sequence, index: index))
        siftUp(heap.count - 1)
    }

    private mutating func heapRemove(at position: Int) {
        let removed = heap[position].index
        let last = heap.removeLast()
        slab[removed].pointee.place = TimerEntry.unplaced
        guard position < heap.count else { return }
        heap[position] = last
        slab[last.index].pointee.place = Int32(position)
        if position > 0 && last.precedes(heap[(position - 1) / 4]) {
            siftUp(position)
        } else {
            siftDown(position)
        }
    }

    private mutating func siftUp(_ start: Int) {
        heap.withUnsafeMutableBufferPointer { heap in
            var position = start
            let moving = heap[position]
            while position > 0 {
                let parent = (position - 1) / 4
                let parentSlot = heap[parent]
                guard moving.precedes(parentSlot) else { break }
                heap[position] = parentSlot
                slab[parentSlot.index].pointee.place = Int32(position)
                position = parent
            }
            heap[position] = moving
            slab[moving.index].pointee.place = Int32(position)
        }
    }

    private mutating func siftDown(_ start: Int) {
        heap.withUnsafeMutableBufferPointer { heap in
            var position = start
            let moving = heap[position]
            let count = heap.count
            while true {
                let firstChild = 4 * position + 1
                guard firstChild < count else { break }
                var best = firstChild
                var child = firstChild + 1
                let end = min(firstChild + 4, count)
                while child < end {
                    if heap[child].precedes(heap[best]) { best = child }
                    child += 1
                }
                let bestSlot = heap[best]
                guard bestSlot.precedes(moving) else { break }
                heap[position] = bestSlot
                slab[bestSlot.index].pointee.place = Int32(position)
                position = best
            }
            heap[position] = moving
            slab[moving.index].pointee.place = Int32(position)
        }
    }
}
