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
    /// - the heap and the wheel together hold exactly ``count`` entries; with ``Layout/heap`` the
    ///   wheel is empty.
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
        for bucket in 0..<Wheel.bucketCount {
            let (level, digit) = (bucket >> Self.levelBits, bucket & (Self.bucketsPerLevel - 1))
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
                if tick < horizon { problems.append("bucket \(bucket): entry \(index) lies before the horizon") }
                if Int(truncatingIfNeeded: tick >> Int64(level * Self.levelBits)) & (Self.bucketsPerLevel - 1) != digit {
                    problems.append("bucket \(bucket): entry \(index) has another digit at level \(level)")
                }
                if entry.deadline < earliestDeadlines[bucket] { problems.append("bucket \(bucket): entry \(index) is due before the bucket's bound") }
                previous = index
                index = entry.next
                length += 1
                if length > slab.count {
                    problems.append("bucket \(bucket): the list does not end")
                    break
                }
            }
            if tails[bucket] != previous { problems.append("bucket \(bucket): tail \(tails[bucket]), last entry \(previous)") }
            wheelCount += length
        }
        if heap.count + wheelCount != count { problems.append("heap \(heap.count) + wheel \(wheelCount) entries, count \(count)") }
        if layout == .heap && wheelCount != 0 { problems.append("the heap layout has \(wheelCount) entries in the wheel") }
        return problems
    }
}
