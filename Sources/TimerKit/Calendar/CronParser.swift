/// Reads the text of a ``CronExpression``, field by field, naming the field and the reason for
/// anything it refuses.
struct CronParser {
    let text: String

    /// A field's place, its range and its names.
    struct Field {
        let name: String
        let range: ClosedRange<Int>
        var names: [String] = []
        /// The value of `names[0]`.
        var firstNameValue = 0
    }

    static let second = Field(name: "second", range: 0...59)
    static let minute = Field(name: "minute", range: 0...59)
    static let hour = Field(name: "hour", range: 0...23)
    static let dayOfMonth = Field(name: "day-of-month", range: 1...31)
    static let month = Field(
        name: "month", range: 1...12, names: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], firstNameValue: 1)
    /// 0–7: 7 is Sunday too, folded onto 0 once read.
    static let dayOfWeek = Field(name: "day-of-week", range: 0...7, names: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"], firstNameValue: 0)

    static let shorthands: [String: String] = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0", "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *", "@hourly": "0 * * * *"
    ]

    func expression() throws(TimerError) -> CronExpression {
        var body = text.lowercased().trimmingWhitespace()
        if body.hasPrefix("@") {
            guard let expanded = Self.shorthands[body] else {
                throw fail(
                    body == "@reboot"
                        ? "@reboot names no time: it is not a schedule"
                        : "unknown shorthand '\(body)': use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly")
            }
            body = expanded
        }
        let fields = body.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 || fields.count == 6 else {
            throw fail(
                "expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got \(fields.count)")
        }
        let offset = fields.count - 5
        let seconds = offset == 1 ? try plain(fields[0], Self.second) : 1
        let minutes = try plain(fields[offset], Self.minute)
        let hours = try plain(fields[offset + 1], Self.hour)
        let days = try dayOfMonth(fields[offset + 2])
        let months = try plain(fields[offset + 3], Self.month)
        let weekdays = try dayOfWeek(fields[offset + 4])
        return CronExpression(
            seconds: seconds, minutes: minutes, hours: UInt32(hours), daysOfMonth: UInt32(truncatingIfNeeded: days.plain),
            nearestWeekdays: days.nearest, lastDayOfMonth: days.last, lastWeekdayOfMonth: days.lastWeekday, months: UInt16(months),
            daysOfWeek: weekdays.plain, lastWeekdays: weekdays.last, nthWeekdays: weekdays.nth)
    }

    func fail(_ reason: String) -> TimerError { .invalidCalendarRule("cron expression '\(text)': \(reason)") }

    func fail(_ field: Field, _ item: Substring, _ reason: String) -> TimerError {
        fail("\(field.name) field, '\(item)': \(reason)")
    }

    /// A field of values, ranges and steps only: its bit mask.
    func plain(_ text: String, _ field: Field) throws(TimerError) -> UInt64 {
        var mask: UInt64 = 0
        for item in try items(text, field) { mask |= try values(item, field) }
        return mask
    }

    func items(_ text: String, _ field: Field) throws(TimerError) -> [Substring] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        if let empty = items.firstIndex(where: \.isEmpty) {
            throw fail("\(field.name) field, '\(text)': an empty item at position \(empty + 1) of the list")
        }
        return items
    }

    /// The values of one item — `*`, `n`, `a-b`, `*/s`, `a-b/s`, `a/s` — as a bit mask.
    func values(_ item: Substring, _ field: Field) throws(TimerError) -> UInt64 {
        let parts = item.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        var step = 1
        if parts.count == 2 {
            // A step past the range's end is allowed (as in cron): `*/75` is just the first value.
            guard !parts[1].isEmpty, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(parts[1]) else {
                throw fail(field, item, "the step '\(parts[1])' is not a number")
            }
            guard value >= 1 else { throw fail(field, item, "a step must be at least 1") }
            step = value
        }
        let base = parts[0]
        var (low, high): (Int, Int)
        if base == "*" || base == "?" {
            guard base == "*" || field.name.hasPrefix("day") else { throw fail(field, item, "'?' stands for '*' in a day field only") }
            (low, high) = (field.range.lowerBound, field.name == Self.dayOfWeek.name ? 6 : field.range.upperBound)
        } else {
            let ends = base.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            low = try value(ends[0], field, in: item)
            if ends.count == 2 {
                high = try value(ends[1], field, in: item)
                // Sunday ends a weekday range as 7: sat-sun is 6-7.
                if field.name == Self.dayOfWeek.name, high == 0, low > 0 { high = 7 }
                guard low <= high else { throw fail(field, item, "the range runs backwards (\(low) is after \(high))") }
            } else {
                // `a/s` runs from a to the field's end (Saturday, 6, for weekdays).
                high = parts.count == 2 ? (field.name == Self.dayOfWeek.name ? max(low, 6) : field.range.upperBound) : low
            }
        }
        var mask: UInt64 = 0
        for value in stride(from: low, through: high, by: step) {
            // Day of week 7 is Sunday, 0.
            mask |= 1 << (field.name == Self.dayOfWeek.name && value == 7 ? 0 : value)
        }
        return mask
    }

    /// A number or a name in the field's range.
    func value(_ text: Substring, _ field: Field, in item: Substring) throws(TimerError) -> Int {
        if let index = field.names.firstIndex(of: String(text)) { return index + field.firstNameValue }
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            let names = field.names.isEmpty ? "" : " or a name (\(field.names.first!)–\(field.names.last!))"
            throw fail(field, item, "'\(text)' is not a number\(names)")
        }
        guard let value = Int(text), field.range.contains(value) else {
            throw fail(field, item, "\(text) is not in \(field.range.lowerBound)–\(field.range.upperBound)")
        }
        return value
    }

    /// The day-of-month field: values, `L`, `LW` and `nW`.
    func dayOfMonth(_ text: String) throws(TimerError) -> (plain: UInt64, nearest: UInt32, last: Bool, lastWeekday: Bool) {
        var result: (plain: UInt64, nearest: UInt32, last: Bool, lastWeekday: Bool) = (0, 0, false, false)
        let field = Self.dayOfMonth
        for item in try items(text, field) {
            if item == "l" {
                result.last = true
            } else if item == "lw" {
                result.lastWeekday = true
            } else if item.hasSuffix("w") {
                let day = try value(item.dropLast(), field, in: item)
                result.nearest |= 1 << day
            } else if item.contains("l") || item.contains("w") {
                throw fail(field, item, "'L' stands alone or as 'LW', and 'W' follows a single day (15W)")
            } else {
                result.plain |= try values(item, field)
            }
        }
        return result
    }

    /// The day-of-week field: values, `nL` and `n#k`.
    func dayOfWeek(_ text: String) throws(TimerError) -> (plain: UInt8, last: UInt8, nth: UInt64) {
        var result: (plain: UInt8, last: UInt8, nth: UInt64) = (0, 0, 0)
        let field = Self.dayOfWeek
        for item in try items(text, field) {
            if let hash = item.firstIndex(of: "#") {
                let weekday = try value(item[..<hash], field, in: item) % 7
                let ordinal = item[item.index(after: hash)...]
                guard ordinal.allSatisfy({ $0.isASCII && $0.isNumber }), let nth = Int(ordinal), (1...5).contains(nth) else {
                    throw fail(field, item, "'#' takes the weekday's ordinal in the month, 1 to 5")
                }
                result.nth |= 1 << (weekday * 5 + nth - 1)
            } else if item.hasSuffix("l"), item.count > 1 {
                result.last |= 1 << (try value(item.dropLast(), field, in: item) % 7)
            } else if item == "l" {
                throw fail(field, item, "'L' in the day of week follows a weekday: 5L is the month's last Friday")
            } else {
                result.plain |= UInt8(try values(item, field))
            }
        }
        return result
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}
