import CTimerKitShims
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

extension TimerWork {
    /// Runs a callback's closure (a timer's fires go through its state machine instead).
    @inline(__always)
    func runCallback() {
        switch self {
        case .callback(let body): body()
        case .queued(let queued): queued.work()
        case .timer, .none: preconditionFailure("TimerWork.runCallback(): not a callback")
        }
    }
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

/// A due callback on its way to its run: its entry stays allocated, in the ``TimerEntry/delivering``
/// state, until whoever delivers it has claimed it (or found it withdrawn) and released the entry
/// under its shard's lock. So `cancel()` can stop a callback up to the instant its run begins (C8).
///
/// Sendable by construction: the entry cannot be freed or reused before the ticket's holder releases
/// it, and the only fields touched outside the lock are the delivery state (atomically) and, by the
/// winner of the compare-exchange alone, the closure.
struct CallbackTicket: @unchecked Sendable {
    let index: Int32
    let entry: UnsafeMutablePointer<TimerEntry>
    /// The queue it runs on, or `nil` for the engine thread.
    let queue: DispatchQueue?

    /// Claims the run: returns the closure, or `nil` when the callback was withdrawn first. The
    /// compare-exchange is the instant the run begins; nothing that can block or wake another thread
    /// lies between it and the call.
    func claim() -> TimerWork? {
        guard ctk_compare_exchange_i32(entry.pointer(to: \.place)!, TimerEntry.delivering, TimerEntry.claimed) else {
            return nil
        }
        return Self.takeWork(entry)
    }

    /// Withdraws a callback that is being delivered but whose run has not begun; returns its work
    /// (to be released by the caller), or `nil` if its run has begun.
    static func withdraw(_ entry: UnsafeMutablePointer<TimerEntry>) -> TimerWork? {
        guard ctk_compare_exchange_i32(entry.pointer(to: \.place)!, TimerEntry.delivering, TimerEntry.withdrawn) else {
            return nil
        }
        return takeWork(entry)
    }

    /// Moves the work out of the entry, leaving `.none` (no retain, no release). Only the winner of
    /// the compare-exchange calls this, so nobody else touches the field meanwhile.
    private static func takeWork(_ entry: UnsafeMutablePointer<TimerEntry>) -> TimerWork {
        let slot = entry.pointer(to: \.work)!
        let work = slot.move()
        slot.initialize(to: .none)
        return work
    }

    /// The entry's delivery state, read atomically.
    static func place(of entry: UnsafeMutablePointer<TimerEntry>) -> Int32 {
        ctk_load_i32(entry.pointer(to: \.place)!)
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
    /// The next entry in the same wheel bucket or ring slot, or in the free list; -1 for none.
    var next: Int32
    /// The previous entry in the same wheel bucket or ring slot; -1 for none.
    var previous: Int32
    /// Where the entry is: ≥ 0 its index in the near heap, ``TimerEntry/unplaced`` when free,
    /// `-2 - b` when in bucket `b` (a wheel bucket, or a ring slot from ``TimerStore/ringFirstBucket``
    /// on), and one of the delivery states (``delivering``, ``claimed``, ``withdrawn``) for a
    /// callback taken out of the store for its run. A delivery state is changed with atomic
    /// operations (``CallbackTicket``), also outside its shard's lock.
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
    /// A due callback handed to its delivery target; it can still be cancelled.
    static let delivering = Int32.min
    /// A callback whose run has begun (C8: from here on, `cancel()` cannot stop it).
    static let claimed = Int32.min + 1
    /// A due callback that `cancel()` or a shutdown stopped before its run began.
    static let withdrawn = Int32.min + 2

    /// Whether `place` says the entry is in the heap or the wheel.
    @inline(__always)
    static func isStored(_ place: Int32) -> Bool { place >= 0 || (place <= -2 && place > withdrawn) }

    static let free = TimerEntry(work: .none, sequence: 0, next: -1, previous: -1, place: unplaced, slack: 0, deadline: 0)
}

/// Paged storage for entries with a free list: O(1) allocation without moving entries, and no
/// capacity doubling (a million entries take a million entries' pages, to within one page).
///
/// Entries are addressed by `Int32` index; the pages never move, so an entry's address is stable
/// until it is freed. Not thread-safe: its shard's lock guards it.
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

    /// The indices of the entries in use (stored, or a callback being delivered).
    func indicesInUse() -> [Int32] {
        (0..<Int32(highWater)).filter { CallbackTicket.place(of: self[$0]) != TimerEntry.unplaced }
    }
}
