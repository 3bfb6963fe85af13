import Foundation

extension CalendarSchedule {
    /// The schedule as text: `CRON_TZ=Europe/Berlin */15 9-17 * * 1-5`, then its bounds and
    /// jitter if it has them — `; from 2027-01-01T00:00:00Z; until 2027-07-01T00:00:00Z; jitter
    /// 30000ms; seed 7`. It reads back (``init(parsing:in:)``) as an equal schedule.
    public var description: String {
        var parts = ["CRON_TZ=\(timeZoneIdentifier) \(expression)"]
        if let startSecond { parts.append("from \(Self.utcText(startSecond))") }
        if let endSecond { parts.append("until \(Self.utcText(endSecond))") }
        if jitterMilliseconds > 0 { parts.append("jitter \(jitterMilliseconds)ms") }
        if jitterSeed != 0 { parts.append("seed \(jitterSeed)") }
        return parts.joined(separator: "; ")
    }

    /// Reads a schedule from text: a cron expression (five or six fields, or a shorthand such as
    /// `@daily`, optionally after `CRON_TZ=Zone`), or a ``CalendarRule``'s days and time
    /// (`mon..fri 09:00`); then, separated by `;`, `from DATE`, `until DATE` (ISO 8601 in UTC,
    /// `2027-01-01T00:00:00Z`), `jitter Nms` and `seed N` — the form `description` writes.
    ///
    /// - Parameters:
    ///   - text: The schedule's text.
    ///   - timeZone: The zone of an expression without `CRON_TZ=`.
    /// - Throws: ``TimerError/invalidCalendarRule(_:)``, naming what could not be read.
    public init(parsing text: String, in timeZone: TimeZone = .current) throws(TimerError) {
        try self.init(parsing: text, in: timeZone, knownZoneRequired: true)
    }

    /// Reads a schedule; with `knownZoneRequired` false, a `CRON_TZ=` zone this system does not
    /// know is kept by name (a stored schedule written where the zone database is newer): such a
    /// schedule has no occurrences here.
    package init(parsing text: String, in timeZone: TimeZone, knownZoneRequired: Bool) throws(TimerError) {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
        let rule = parts[0]
        let fieldCount = rule.split(whereSeparator: \.isWhitespace).count
        var schedule: CalendarSchedule
        if rule.hasPrefix("@") || rule.uppercased().hasPrefix("CRON_TZ=") || rule.uppercased().hasPrefix("TZ=") || fieldCount >= 5 {
            schedule = try CalendarSchedule(cron: rule, in: timeZone, knownZoneRequired: knownZoneRequired)
        } else {
            schedule = CalendarSchedule(try CalendarRule(rule, in: timeZone))
        }
        var (start, end, jitter, seed): (Date?, Date?, Duration, UInt64) = (nil, nil, .zero, 0)
        for part in parts.dropFirst() {
            let words = part.split(separator: " ", maxSplits: 1).map(String.init)
            guard words.count == 2 else { throw .invalidCalendarRule("'\(part)' in '\(text)' is not 'from DATE', 'until DATE', 'jitter Nms' or 'seed N'") }
            switch words[0] {
            case "from": start = try Self.utcDate(words[1], in: text)
            case "until": end = try Self.utcDate(words[1], in: text)
            case "jitter":
                guard words[1].hasSuffix("ms"), let milliseconds = Int64(words[1].dropLast(2)) else {
                    throw .invalidCalendarRule("'\(words[1])' in '\(text)' is not a jitter in milliseconds such as 30000ms")
                }
                jitter = .milliseconds(milliseconds)
            case "seed":
                guard let value = UInt64(words[1]) else { throw .invalidCalendarRule("'\(words[1])' in '\(text)' is not a seed (a whole number)") }
                seed = value
            default:
                throw .invalidCalendarRule("unknown part '\(words[0])' in '\(text)': use from, until, jitter or seed")
            }
        }
        if start != nil || end != nil { schedule = try schedule.bounded(from: start, until: end) }
        if jitter != .zero || seed != 0 { schedule = try schedule.jittered(upTo: jitter, seed: seed) }
        self = schedule
    }

    /// `2027-01-01T00:00:00Z`.
    static func utcText(_ second: Int64) -> String {
        let time = CivilTime(localSeconds: second)
        func pad(_ value: Int, _ width: Int = 2) -> String {
            let digits = String(abs(value))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(time.year, 4))-\(pad(time.month))-\(pad(time.day))T\(pad(time.hour)):\(pad(time.minute)):\(pad(time.second))Z"
    }

    static func utcDate(_ text: String, in whole: String) throws(TimerError) -> Date {
        let invalid = TimerError.invalidCalendarRule("'\(text)' in '\(whole)' is not a date in UTC such as 2027-01-01T00:00:00Z")
        let digits = text.split(whereSeparator: { "-T:Z".contains($0) }).map { Int($0) }
        guard text.hasSuffix("Z"), text.count == 20, digits.count == 6, digits.allSatisfy({ $0 != nil }) else { throw invalid }
        let values = digits.map { $0! }
        guard (1...12).contains(values[1]), (1...CivilTime.daysIn(month: values[1], of: values[0])).contains(values[2]), values[3] < 24,
            values[4] < 60, values[5] < 60
        else { throw invalid }
        let time = CivilTime(year: values[0], month: values[1], day: values[2], hour: values[3], minute: values[4], second: values[5])
        return Date(timeIntervalSince1970: Double(time.localSeconds))
    }
}

extension CalendarSchedule: Codable {
    /// Decodes a schedule from its text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try CalendarSchedule(parsing: text, in: TimeZone(identifier: "UTC")!, knownZoneRequired: false)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the schedule as its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
