/// A table of columns separated by two spaces, padded to the widest cell, its last column cut to
/// fit a width (with `…`).
struct DurableTable {
    let headers: [String]
    var rows: [[String]] = []

    init(_ headers: String...) { self.headers = headers }

    mutating func append(_ row: [String]) {
        precondition(row.count == headers.count, "a row of \(row.count) cells in a table of \(headers.count) columns")
        rows.append(row.map(DurableFormat.oneLine))
    }

    /// The lines, each at most `width` characters when the columns before the last fit (the last
    /// is cut to what is left, at least 10 characters); `nil` for no limit.
    func lines(width: Int?) -> [String] {
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        let before = widths.dropLast().reduce(0) { $0 + $1 + 2 }
        let lastWidth = width.map { max($0 - before, 10) }
        return ([headers] + rows).map { row in
            var line = ""
            for (index, cell) in row.enumerated() {
                if index == row.count - 1 {
                    line += Self.cut(cell, to: lastWidth)
                } else {
                    line += cell + String(repeating: " ", count: widths[index] - cell.count + 2)
                }
            }
            return String(line.reversed().drop(while: { $0 == " " }).reversed())
        }
    }

    /// `text`, cut to `width` characters with `…` when longer.
    static func cut(_ text: String, to width: Int?) -> String {
        guard let width, text.count > width else { return text }
        return String(text.prefix(max(width - 1, 0))) + "…"
    }
}
