import Foundation

extension TimerStore {
    /// What is wrong with the store's structure, if anything — empty when it is sound. O(n), for
    /// tests, which check it after every step of the store's model test:
    ///
    /// - the near heap is in 4-ary (key, creation) order, and each slot's key, sequence and
    ///   position match its entry's;
    /// - each wheel bucket's list is linked both ways from its head to its tail, its bitmap bit is
    ///   set exactly when the list is not empty, and every entry in it names the bucket, lies at or
    ///   after the horizon, has the bucket's digit at the bucket's level, and has a deadline no
    ///   earlier than the bucket's lower bound;
    /// - each ring slot's list is linked the same way, and every entry in it names the slot, lies
    ///   before the horizon and within the ring's span (from its base, `ringSize` ticks), in the
    ///   slot of its tick; each ring word's summary bit is set exactly when the word is not zero;
    ///   the ring holds ``ringCount`` entries;
    /// - the heap, the ring and the wheel together hold exactly ``count`` entries; with
    ///   ``Layout/heap`` the ring and the wheel are empty.
    func invariantViolations() -> [String] {
        var problems: [String] = []
        for (position, slot) in heap.enumerated() {
            let entry = slab[slot.index].pointee
            if entry.place != Int32(position) { problems.append("heap slot \(position): its entry says it is at \(entry.place)") }
            if entry.key != slot.key || entry.sequence != slot.sequence {
                problems.append("heap slot \(position): key or sequence differs from its entry's")
            }
            if position > 0, slot.precedes(heap[(position - 1) / 4]) { problems.append("heap slot \(position) precedes its parent") }
        }
        var wheelCount = 0
        var ringEntries = 0
        // The wheel's buckets, and the ring's except those of empty words whose slots all read
        // empty (checked 64 at a time: the ring has 8,192 slots, and the store's model test checks
        // the store after every step). A word whose slots do not all read empty is checked one by one.
        let emptySlots = [Int32](repeating: -1, count: 64)
        let bytes = 64 * MemoryLayout<Int32>.stride
        var buckets = Array(0..<Self.ringFirstBucket)
        for word in 0..<(hasRing ? Self.ringSize / 64 : 0) {
            let first = Self.ringFirstBucket + word * 64
            if bitmaps[Self.levelCount + word] == 0 && memcmp(heads + first, emptySlots, bytes) == 0
                && memcmp(tails + first, emptySlots, bytes) == 0
            {
                continue
            }
            buckets += first..<first + 64
        }
        for bucket in buckets {
            let (level, digit) = (bucket >> Self.levelBits, bucket & (Self.bucketsPerLevel - 1))
            let isRing = bucket >= Self.ringFirstBucket
            let marked = bitmaps[level] & (1 << UInt64(digit)) != 0
            if marked != (heads[bucket] >= 0) { problems.append("bucket \(bucket): bitmap bit \(marked), head \(heads[bucket])") }
            var index = heads[bucket]
            var previous: Int32 = -1
            var length = 0
            while index >= 0 {
                let entry = slab[index].pointee
                let tick = entry.key >> Self.tickShift
                if entry.place != -2 - Int32(bucket) { problems.append("bucket \(bucket): entry \(index) says it is at \(entry.place)") }
                if entry.previous != previous { problems.append("bucket \(bucket): entry \(index) links back to \(entry.previous), not \(previous)") }
                if isRing {
                    if tick >= horizon { problems.append("ring bucket \(bucket): entry \(index) lies at or after the horizon") }
                    if tick < ringBase || tick - ringBase >= Int64(Self.ringSize) {
                        problems.append("ring bucket \(bucket): entry \(index) lies outside the ring's span")
                    }
                    if Self.ringFirstBucket + Self.ringSlot(of: tick) != bucket {
                        problems.append("ring bucket \(bucket): entry \(index) belongs in another slot")
                    }
                } else {
                    if tick < horizon { problems.append("bucket \(bucket): entry \(index) lies before the horizon") }
                    if Int(truncatingIfNeeded: tick >> Int64(level * Self.levelBits)) & (Self.bucketsPerLevel - 1) != digit {
                        problems.append("bucket \(bucket): entry \(index) has another digit at level \(level)")
                    }
                    if entry.deadline < earliestDeadlines[bucket] { problems.append("bucket \(bucket): entry \(index) is due before the bucket's bound") }
                }
                previous = index
                index = entry.next
                length += 1
                if length > slab.count {
                    problems.append("bucket \(bucket): the list does not end")
                    break
                }
            }
            if tails[bucket] != previous { problems.append("bucket \(bucket): tail \(tails[bucket]), last entry \(previous)") }
            if isRing { ringEntries += length } else { wheelCount += length }
        }
        for word in 0..<(hasRing ? Self.ringSize / 64 : 0) {
            let summarized = ringSummary[word >> 6] & (1 << UInt64(word & 63)) != 0
            if summarized != (bitmaps[Self.levelCount + word] != 0) { problems.append("ring word \(word): summary bit \(summarized)") }
        }
        if ringEntries != ringCount { problems.append("the ring holds \(ringEntries) entries, its count says \(ringCount)") }
        if heap.count + ringEntries + wheelCount != count {
            problems.append("heap \(heap.count) + ring \(ringEntries) + wheel \(wheelCount) entries, count \(count)")
        }
        if layout == .heap && wheelCount + ringEntries != 0 {
            problems.append("the heap layout has \(wheelCount + ringEntries) entries in the wheel or the ring")
        }
        return problems
    }
}
