/// Durations as people type them on the command line: `250ms`, `1.5s`, `90s`, `2m`, `1h30m`, `1d`,
/// `1w`, `us`/`µs` and `ns` for precision, and a bare number for seconds (as `sleep` takes it).
///
/// The value is exact: decimal digits are read as integers, never through a `Double`, so `0.1s` is
/// 100 000 000 ns. Anything else — an unknown unit, a sign, a value beyond 100 years or finer than a
/// nanosecond — is refused with a ``UsageError`` that names the problem.
enum DurationText {
    /// Nanoseconds per unit, longest names first where one is a prefix of another.
    static let units: [(name: String, nanoseconds: Int64)] = [
        ("ns", 1), ("us", 1_000), ("µs", 1_000), ("μs", 1_000), ("ms", 1_000_000),
        ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000),
        ("d", 86_400_000_000_000), ("w", 604_800_000_000_000)
    ]

    /// The longest duration the tool takes: 100 Gregorian years. Every clock's deadline
    /// (now + duration, in 64-bit nanoseconds) is representable for centuries past it, so nothing
    /// the parser accepts is refused later by the library.
    static let maximumNanoseconds: Int64 = 3_155_695_200 * 1_000_000_000

    static let help = "a duration such as 250ms, 1.5s, 90s, 2m, 1h30m, 1d, 1w (us and ns too; a bare number is seconds)"

    /// Parses `text` into whole nanoseconds.
    static func nanoseconds(_ text: String) throws(UsageError) -> Int64 {
        let trimmed = text.trimmingWhitespace
        guard !trimmed.isEmpty else { throw UsageError("empty duration: expected \(help)") }
        if trimmed.first == "-" { throw UsageError("negative duration '\(text)': expected \(help)") }
        var scanner = Scanner(trimmed)
        var total: Int64 = 0
        var sawTerm = false
        while !scanner.isAtEnd {
            scanner.skipSpaces()
            guard let number = scanner.decimal() else {
                throw UsageError("invalid duration '\(text)': expected \(help)")
            }
            scanner.skipSpaces()
            let unitName = scanner.letters()
            let unit: Int64
            if unitName.isEmpty {
                // A bare number is seconds, and only as the whole text ("1h30" is a typo, not 1h30s).
                guard !sawTerm, scanner.isAtEnd else {
                    throw UsageError("invalid duration '\(text)': a number without a unit after \(sawTerm ? "another term" : "it")")
                }
                unit = 1_000_000_000
            } else if let known = units.first(where: { $0.name == unitName }) {
                unit = known.nanoseconds
            } else {
                throw UsageError("unknown unit '\(unitName)' in '\(text)': use ns, us, ms, s, m, h, d or w")
            }
            total = try add(total, number.times(unit, text: text), text: text)
            sawTerm = true
        }
        guard total <= maximumNanoseconds else { throw tooLong(text) }
        return total
    }

    static func tooLong(_ text: String) -> UsageError {
        UsageError("duration '\(text)' is too long (at most 100 years)")
    }

    /// Parses `text` into a `Duration`.
    static func duration(_ text: String) throws(UsageError) -> Duration {
        .nanoseconds(try nanoseconds(text))
    }

    /// A positive duration (an interval, a countdown's length).
    static func positive(_ text: String, what: String) throws(UsageError) -> Duration {
        let value = try nanoseconds(text)
        guard value > 0 else { throw UsageError("\(what) must be more than zero, got '\(text)'") }
        return .nanoseconds(value)
    }

    private static func add(_ a: Int64, _ b: Int64, text: String) throws(UsageError) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        guard !overflow else { throw tooLong(text) }
        return sum
    }

    /// A decimal number read digit by digit: its integer part and its fraction's digits.
    struct Decimal {
        var integer: [UInt8]
        var fraction: [UInt8]

        /// The number times `unit` nanoseconds, exactly.
        func times(_ unit: Int64, text: String) throws(UsageError) -> Int64 {
            let tooLong = DurationText.tooLong(text)
            var whole: Int64 = 0
            for digit in integer {
                let (shifted, o1) = whole.multipliedReportingOverflow(by: 10)
                let (next, o2) = shifted.addingReportingOverflow(Int64(digit))
                guard !o1, !o2 else { throw tooLong }
                whole = next
            }
            let (product, overflow) = whole.multipliedReportingOverflow(by: unit)
            guard !overflow else { throw tooLong }
            // The fraction: digits × unit / 10^count, which must come out whole.
            var numerator: Int64 = 0
            var denominator: Int64 = 1
            for digit in fraction {
                // Past 18 digits only zeros can keep the value exact.
                if denominator >= 1_000_000_000_000_000_000 / 10 {
                    guard digit == 0 else { throw UsageError("duration '\(text)' is finer than a nanosecond") }
                    continue
                }
                numerator = numerator * 10 + Int64(digit)
                denominator *= 10
            }
            // numerator / denominator < 1, so numerator × unit / denominator < unit: compute it
            // without overflow by splitting the unit.
            let (quotient, remainder) = unit.quotientAndRemainder(dividingBy: denominator)
            let exactPart = numerator.multipliedReportingOverflow(by: quotient)
            let restNumerator = numerator.multipliedReportingOverflow(by: remainder)
            guard !exactPart.overflow, !restNumerator.overflow else { throw tooLong }
            guard restNumerator.partialValue % denominator == 0 else {
                throw UsageError("duration '\(text)' is finer than a nanosecond")
            }
            let fractional = exactPart.partialValue + restNumerator.partialValue / denominator
            let (sum, o3) = product.addingReportingOverflow(fractional)
            guard !o3 else { throw tooLong }
            return sum
        }
    }

    /// Reads a duration's text from left to right.
    struct Scanner {
        private let characters: [Character]
        private var position = 0

        init(_ text: Substring) { characters = Array(text) }

        var isAtEnd: Bool { position == characters.count }

        /// `123`, `1.5`, `.5`; nil (and nothing consumed) if no digit is here.
        mutating func decimal() -> Decimal? {
            let start = position
            var integer: [UInt8] = []
            var fraction: [UInt8] = []
            while let digit = digit() { integer.append(digit) }
            if position < characters.count, characters[position] == "." {
                position += 1
                while let digit = digit() { fraction.append(digit) }
            }
            guard !integer.isEmpty || !fraction.isEmpty else {
                position = start
                return nil
            }
            return Decimal(integer: integer, fraction: fraction)
        }

        /// Skips spaces between a number and its unit, and between terms (`1h 30m`).
        mutating func skipSpaces() {
            while position < characters.count, characters[position] == " " { position += 1 }
        }

        /// The letters here (a unit's name), possibly none.
        mutating func letters() -> String {
            var name = ""
            while position < characters.count, characters[position].isLetter {
                name.append(characters[position])
                position += 1
            }
            return name
        }

        private mutating func digit() -> UInt8? {
            guard position < characters.count, let ascii = characters[position].asciiValue, (48...57).contains(ascii) else { return nil }
            position += 1
            return ascii - 48
        }
    }
}

extension String {
    /// The text without leading and trailing spaces, tabs and newlines.
    var trimmingWhitespace: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}

extension DurationText {
    /// A duration as this tool prints it: `200ms`, `1.5s`, `1h30m`, `0s`.
    static func describe(_ duration: Duration) -> String {
        var rest = wholeNanoseconds(duration)
        guard rest != 0 else { return "0s" }
        var text = rest < 0 ? "-" : ""
        rest = abs(rest)
        for (name, size) in [("w", 604_800_000_000_000), ("d", 86_400_000_000_000), ("h", 3_600_000_000_000), ("m", 60_000_000_000)] as [(String, Int64)]
        where rest >= size {
            text += "\(rest / size)\(name)"
            rest %= size
        }
        guard rest > 0 else { return text }
        if rest % 1_000_000 == 0 && rest < 1_000_000_000 { return text + "\(rest / 1_000_000)ms" }
        if rest < 1_000_000 && rest % 1_000 == 0 { return text + "\(rest / 1_000)us" }
        if rest < 1_000 { return text + "\(rest)ns" }
        // Seconds with as many decimals as it takes (up to nanoseconds).
        var fraction = String(rest % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        return text + "\(rest / 1_000_000_000)" + (fraction.isEmpty ? "" : ".\(fraction)") + "s"
    }
}
