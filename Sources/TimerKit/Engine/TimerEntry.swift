import Dispatch

/// What an entry of the store runs when its deadline comes.
enum TimerWork {
    /// A ``ScheduledCallback``'s closure, run on the engine thread.
    case callback(@Sendable () -> Void)
    /// A ``ScheduledCallback``'s closure, run on a queue.
    case queued(QueuedCallback)
    /// A scheduled timer: its state machine decides what the fire means.
    case timer(ScheduledTimer)
    /// A free entry.
    case none
}

/// A callback delivered on a queue. Kept out of line so that the common case, a callback on the
/// engine thread, costs no allocation beyond its closure.
final class QueuedCallback: Sendable {
    let queue: DispatchQueue
    let work: @Sendable () -> Void

    init(queue: DispatchQueue, work: @escaping @Sendable () -> Void) {
        self.queue = queue
        self.work = work
    }
}

/// One pending deadline: 48 bytes, kept in pages of the store's slab.
///
/// The fields are ordered so that the 4-byte ones fill the padding after the 17-byte `work`.
struct TimerEntry {
    var work: TimerWork
    /// Creation order on the engine, truncated to 32 bits; breaks ties between equal keys and tells
    /// a live callback from a later tenant of the same entry. Compared with wrapping arithmetic,
    /// so the order holds between entries created fewer than 2³¹ apart.
    var sequence: UInt32
    /// The next entry in the same wheel bucket, or in the free list; -1 for none.
    var next: Int32
    /// The previous entry in the same wheel bucket; -1 for none.
    var previous: Int32
    /// Where the entry is: ≥ 0 its index in the near heap, ``TimerEntry/unplaced`` when free,
    /// and `-2 - b` when in wheel bucket `b`.
    var place: Int32
    /// `key - deadline`: the tolerance the store orders by, at most `UInt32.max` nanoseconds (a
    /// longer tolerance is narrowed to 4.29 s, which C3 allows: a narrower window is still kept).
    var slack: UInt32
    /// The earliest instant the entry may fire at, in nanoseconds on the engine's clock.
    var deadline: Int64

    /// The latest instant the entry may fire at: its deadline plus its slack. Never overflows: the
    /// slack is clamped when stored.
    @inline(__always)
    var key: Int64 { deadline &+ Int64(slack) }

    static let unplaced: Int32 = -1

    static let free = TimerEntry(work: .none, sequence: 0, next: -1, previous: -1, place: unplaced, slack: 0, deadline: 0)
}

/// Paged storage for entries with a free list: O(1) allocation without moving entries, and no
/// capacity doubling (a million entries take a million entries' pages, to within one page).
///
/// Entries are addressed by `Int32` index; the pages never move, so an entry's address is stable
/// until it is freed. Not thread-safe: the engine's lock guards it.
struct TimerSlab {
    static let pageShift = 10
    static let pageSize = 1 << pageShift

    /// Frees the pages when the store goes away (a struct cannot).
    private final class Pages {
        var pages: [UnsafeMutablePointer<TimerEntry>] = []

        deinit {
            for page in pages {
                page.deinitialize(count: TimerSlab.pageSize)
                page.deallocate()
            }
        }
    }

    private let owner = Pages()
    /// The hot-path copy of `owner.pages` (appended to together).
    private var pages: [UnsafeMutablePointer<TimerEntry>] = []
    private var freeHead: Int32 = -1
    /// Entries ever handed out; those at and above this index have never been used.
    private var highWater = 0
    /// Entries in use.
    private(set) var count = 0

    @inline(__always)
    subscript(index: Int32) -> UnsafeMutablePointer<TimerEntry> {
        pages[Int(index) >> Self.pageShift] + (Int(index) & (Self.pageSize - 1))
    }

    /// Takes a free entry, initialized to ``TimerEntry/free``.
    mutating func allocate() -> Int32 {
        count += 1
        if freeHead >= 0 {
            let index = freeHead
            freeHead = self[index].pointee.next
            self[index].pointee.next = -1
            return index
        }
        precondition(highWater < Int(Int32.max), "TimerKit: more than 2³¹ pending deadlines on one clock")
        if highWater == pages.count << Self.pageShift {
            let page = UnsafeMutablePointer<TimerEntry>.allocate(capacity: Self.pageSize)
            page.initialize(repeating: .free, count: Self.pageSize)
            pages.append(page)
            owner.pages.append(page)
        }
        let index = Int32(highWater)
        highWater += 1
        self[index].pointee.next = -1
        return index
    }

    /// Returns an entry to the free list and hands back what it held. When the last entry goes,
    /// every page but the first is given back to the system.
    mutating func free(_ index: Int32) -> TimerWork {
        let entry = self[index]
        // Move the work out (no retain, no release) and leave `.none`, which owns nothing.
        let slot = entry.pointer(to: \.work)!
        let work = slot.move()
        slot.initialize(to: .none)
        entry.pointee.place = TimerEntry.unplaced
        entry.pointee.previous = -1
        entry.pointee.next = freeHead
        freeHead = index
        count -= 1
        if count == 0 && pages.count > 1 { releasePages() }
        return work
    }

    /// Whether `index` was ever handed out (it may be free now).
    func isAllocated(_ index: Int32) -> Bool { Int(index) < highWater }

    /// Keeps only the first page, all of whose entries are free.
    private mutating func releasePages() {
        for page in pages.dropFirst() {
            page.deinitialize(count: Self.pageSize)
            page.deallocate()
        }
        pages.removeSubrange(1...)
        owner.pages.removeSubrange(1...)
        highWater = 0
        freeHead = -1
    }

    /// The indices of the entries in use.
    func indicesInUse() -> [Int32] {
        (0..<Int32(highWater)).filter { self[$0].pointee.place != TimerEntry.unplaced }
    }
}
