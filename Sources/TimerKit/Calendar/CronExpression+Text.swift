extension CronExpression {
    /// The canonical text: five fields, or six when a second other than 0 matches; each field as
    /// `*`, a step (`*/15`, `9-17/2`), or a list of values and ranges; weekdays as numbers 0–6.
    /// It reads back (``init(_:)``) as an equal expression.
    public var description: String {
        var fields: [String] = []
        if seconds != 1 { fields.append(Self.text(of: seconds, in: 0...59)) }
        fields.append(Self.text(of: minutes, in: 0...59))
        fields.append(Self.text(of: UInt64(hours), in: 0...23))
        fields.append(dayOfMonthText)
        fields.append(Self.text(of: UInt64(months), in: 1...12))
        fields.append(dayOfWeekText)
        return fields.joined(separator: " ")
    }

    private var dayOfMonthText: String {
        guard restrictsDayOfMonth else { return "*" }
        var items: [String] = []
        if daysOfMonth != 0 { items.append(Self.text(of: UInt64(daysOfMonth), in: 1...31)) }
        items += Self.values(in: UInt64(nearestWeekdays)).map { "\($0)W" }
        if lastDayOfMonth { items.append("L") }
        if lastWeekdayOfMonth { items.append("LW") }
        return items.joined(separator: ",")
    }

    private var dayOfWeekText: String {
        guard restrictsDayOfWeek else { return "*" }
        var items: [String] = []
        if daysOfWeek != 0 { items.append(Self.text(of: UInt64(daysOfWeek), in: 0...6)) }
        items += Self.values(in: UInt64(lastWeekdays)).map { "\($0)L" }
        items += Self.values(in: nthWeekdays).map { "\($0 / 5)#\($0 % 5 + 1)" }
        return items.joined(separator: ",")
    }

    static func values(in mask: UInt64) -> [Int] {
        var values: [Int] = []
        var rest = mask
        while rest != 0 {
            values.append(rest.trailingZeroBitCount)
            rest &= rest - 1
        }
        return values
    }

    /// A field's values as `*`, a step, or a list of values and ranges.
    static func text(of mask: UInt64, in range: ClosedRange<Int>) -> String {
        let values = values(in: mask)
        if values.count == range.count { return "*" }
        // An arithmetic run of three or more values with a step above 1: `*/s`, `a/s` or `a-b/s`.
        if values.count >= 3 {
            let step = values[1] - values[0]
            if step > 1, zip(values, values.dropFirst()).allSatisfy({ $1 - $0 == step }) {
                let reachesEnd = values.last! + step > range.upperBound
                if values[0] == range.lowerBound && reachesEnd { return "*/\(step)" }
                return reachesEnd ? "\(values[0])/\(step)" : "\(values[0])-\(values.last!)/\(step)"
            }
        }
        // Runs of consecutive values: `a-b` from three on.
        var items: [String] = []
        var index = 0
        while index < values.count {
            var end = index
            while end + 1 < values.count, values[end + 1] == values[end] + 1 { end += 1 }
            switch end - index {
            case 0: items.append("\(values[index])")
            case 1: items.append("\(values[index]),\(values[end])")
            default: items.append("\(values[index])-\(values[end])")
            }
            index = end + 1
        }
        return items.joined(separator: ",")
    }
}

extension CronExpression: Codable {
    /// Decodes an expression from its text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try CronExpression(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes the expression as its canonical text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
