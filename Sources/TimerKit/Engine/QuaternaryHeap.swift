/// A 4-ary min-heap of timers with back-pointers: O(log n) insert, remove and remove-first.
///
/// Each timer's index lives in ``ScheduledTimer/storeSlot`` so that cancelling needs no search. A
/// 4-ary heap is shallower than a binary one and keeps a node's children in one cache line of
/// references.
struct QuaternaryHeap: TimerStore {
    private var timers: [ScheduledTimer] = []

    var count: Int { timers.count }

    var first: ScheduledTimer? { timers.first }

    mutating func insert(_ timer: ScheduledTimer) {
        precondition(timer.storeSlot < 0, "QuaternaryHeap.insert: the timer is already in a store")
        timers.append(timer)
        timer.storeSlot = timers.count - 1
        siftUp(timers.count - 1)
    }

    mutating func remove(_ timer: ScheduledTimer) {
        let index = timer.storeSlot
        precondition(index >= 0 && index < timers.count && timers[index] === timer, "QuaternaryHeap.remove: the timer is not in this store")
        removeAt(index)
    }

    mutating func removeFirst() -> ScheduledTimer? {
        timers.isEmpty ? nil : removeAt(0)
    }

    mutating func removeAll() -> [ScheduledTimer] {
        for timer in timers { timer.storeSlot = -1 }
        defer { timers = [] }
        return timers
    }

    @discardableResult
    private mutating func removeAt(_ index: Int) -> ScheduledTimer {
        let removed = timers[index]
        let last = timers.removeLast()
        removed.storeSlot = -1
        if index < timers.count {
            timers[index] = last
            last.storeSlot = index
            if index > 0 && last.precedesInStore(timers[(index - 1) / 4]) {
                siftUp(index)
            } else {
                siftDown(index)
            }
        }
        return removed
    }

    private mutating func siftUp(_ start: Int) {
        var index = start
        let moving = timers[index]
        while index > 0 {
            let parent = (index - 1) / 4
            let parentTimer = timers[parent]
            guard moving.precedesInStore(parentTimer) else { break }
            timers[index] = parentTimer
            parentTimer.storeSlot = index
            index = parent
        }
        timers[index] = moving
        moving.storeSlot = index
    }

    private mutating func siftDown(_ start: Int) {
        var index = start
        let moving = timers[index]
        let count = timers.count
        while true {
            let firstChild = 4 * index + 1
            guard firstChild < count else { break }
            var best = firstChild
            var child = firstChild + 1
            let end = min(firstChild + 4, count)
            while child < end {
                if timers[child].precedesInStore(timers[best]) { best = child }
                child += 1
            }
            let bestTimer = timers[best]
            guard bestTimer.precedesInStore(moving) else { break }
            timers[index] = bestTimer
            bestTimer.storeSlot = index
            index = best
        }
        timers[index] = moving
        moving.storeSlot = index
    }
}
