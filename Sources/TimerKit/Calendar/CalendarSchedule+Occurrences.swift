import Foundation

extension CalendarSchedule {
    /// The first occurrence strictly after `date` (with its jitter), or `nil` if there is none —
    /// the schedule has ended, or its zone is unknown here.
    public func nextOccurrence(after date: Date) -> Date? {
        // Dates beyond ±3 million years (and NaN) have no occurrence here rather than a trap.
        guard let zone = timeZone, abs(date.timeIntervalSince1970) < 1e14 else { return nil }
        let offsets = ZoneOffsets(zone)
        let after = Int64(date.timeIntervalSince1970.rounded(.down))
        guard jitterMilliseconds > 0 else {
            return nominalOccurrence(after: after, offsets: offsets).map { Date(timeIntervalSince1970: Double($0)) }
        }
        // The first occurrence whose jittered time is after `date`: it is nominally after
        // `date - jitter`.
        var from = after - (jitterMilliseconds + 999) / 1000 - 1
        while let nominal = nominalOccurrence(after: from, offsets: offsets) {
            let fire = Date(timeIntervalSince1970: Double(nominal) + Double(delayMilliseconds(for: nominal)) / 1000)
            if fire > date { return fire }
            from = nominal
        }
        return nil
    }

    /// The next `count` occurrences after `date`, fewer if the schedule ends.
    public func occurrences(after date: Date, count: Int) -> [Date] {
        var dates: [Date] = []
        var current = date
        while dates.count < count, let next = nextOccurrence(after: current) {
            dates.append(next)
            current = next
        }
        return dates
    }

    /// The latest occurrence after `occurrence` and at or before `now` (or `occurrence` itself if
    /// none), and how many there are: counted one by one up to `limit`; past it, the latest is
    /// found by searching back from `now`, and the count stays at `limit` (at least that many).
    package func catchUp(from occurrence: Date, to now: Date, countingUpTo limit: Int = 10_000) -> (latest: Date, skipped: Int) {
        var latest = occurrence
        var skipped = 0
        while let next = nextOccurrence(after: latest), next <= now {
            guard skipped < limit else { return (lastOccurrence(atOrBefore: now, after: latest, limit: limit), skipped) }
            latest = next
            skipped += 1
        }
        return (latest, skipped)
    }

    /// The last occurrence at or before `now` and after `floor`, searched back from `now` in
    /// doubling windows (`floor` if none is found).
    private func lastOccurrence(atOrBefore now: Date, after floor: Date, limit: Int) -> Date {
        var window = 1.0
        while window < now.timeIntervalSince(floor) * 2 {
            if var last = nextOccurrence(after: max(floor, now.addingTimeInterval(-window))), last <= now {
                for _ in 0..<limit {
                    guard let next = nextOccurrence(after: last), next <= now else { break }
                    last = next
                }
                return last
            }
            window *= 2
        }
        return floor
    }

    /// The delay jitter adds to the occurrence at `second`: a SplitMix64 draw of the seed and the
    /// occurrence, the same on every machine.
    func delayMilliseconds(for second: Int64) -> Int64 {
        guard jitterMilliseconds > 0 else { return 0 }
        let state = StableHash.mix(jitterSeed ^ UInt64(bitPattern: second) &* StableHash.golden)
        return Int64(state % UInt64(jitterMilliseconds + 1))
    }

    /// The first occurrence, without jitter, strictly after the second `after`, within the bounds.
    func nominalOccurrence(after: Int64, offsets: ZoneOffsets) -> Int64? {
        let from = startSecond.map { max(after, $0 - 1) } ?? after
        guard let next = Self.nextInstant(of: expression, after: from, offsets: offsets) else { return nil }
        if let endSecond, next >= endSecond { return nil }
        return next
    }

    /// The first instant strictly after `after` at which `expression` occurs on the wall clock
    /// `offsets` describes, by the rules of daylight saving in the type's documentation.
    ///
    /// The wall clock is searched from the earliest reading it may show after `after` (so that
    /// the second pass of a repeated hour is seen); each matching reading gives its instants — one,
    /// two in a repeated hour, or the reading shifted by the gap when it does not exist — and the
    /// earliest instant after `after` wins. The search stops once no later reading can give an
    /// earlier instant: at once, away from a change.
    static func nextInstant(of expression: CronExpression, after: Int64, offsets: ZoneOffsets) -> Int64? {
        // The offsets a day either side: the search starts at the earliest reading, so that it
        // sees readings a fall-back change repeats after `after`, and readings a spring-forward
        // change skipped just before `after` whose shifted instants are still to come.
        let around = [offsets.offset(at: after - 86_400), offsets.offset(at: after), offsets.offset(at: after + 86_400)]
        var largestOffset = Int64(around.max()!)
        var reading = CivilTime(localSeconds: after + Int64(around.min()!))
        var best: Int64?
        // A bound on the readings looked at, far above what a change needs.
        for _ in 0..<10_000 {
            guard let match = expression.nextMatch(after: reading) else { break }
            reading = match
            let local = match.localSeconds
            let instants = offsets.instants(ofLocal: local)
            largestOffset = max(largestOffset, Int64(instants.largestOffset))
            // No reading from here on maps to an instant before `best`.
            if let found = best, local - largestOffset > found { break }
            for instant in [instants.first, expression.matchesEveryHour ? instants.second : nil].compactMap(\.self) where instant > after {
                best = min(best ?? instant, instant)
            }
            // The next reading is at least a second later: it cannot beat `best` either.
            if let found = best, local + 1 - largestOffset >= found { break }
        }
        return best
    }
}

/// A zone's offsets from UTC, and the instants a wall-clock reading stands for.
struct ZoneOffsets {
    let zone: TimeZone

    init(_ zone: TimeZone) { self.zone = zone }

    /// The offset, in seconds, at the instant `second`.
    func offset(at second: Int64) -> Int {
        zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(second)))
    }

    /// The instants of a wall-clock reading (`local` seconds since 1970 on the wall clock): one;
    /// two in a repeated hour (`second` is the later); or, for a reading the clocks skip, the
    /// reading read with the offset before the change — shifted by the gap.
    func instants(ofLocal local: Int64) -> (first: Int64, second: Int64?, largestOffset: Int) {
        // Offsets run from −12 h to +14 h: the instant lies between local − 14 h and local + 12 h;
        // the offsets just outside that window are those before and after any change in it.
        let before = offset(at: local - 16 * 3600)
        let after = offset(at: local + 14 * 3600)
        let largest = max(before, after)
        guard before != after else { return (local - Int64(before), nil, largest) }
        let early = local - Int64(before)
        let late = local - Int64(after)
        let earlyExists = offset(at: early) == before
        let lateExists = offset(at: late) == after
        switch (earlyExists, lateExists) {
        case (true, true): return (min(early, late), max(early, late), largest)
        case (true, false): return (early, nil, largest)
        case (false, true): return (late, nil, largest)
        // Skipped by the change: read with the offset before it, the reading lands after the gap.
        case (false, false): return (early, nil, largest)
        }
    }
}
