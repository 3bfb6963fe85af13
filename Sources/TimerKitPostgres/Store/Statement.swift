import PostgresNIO

/// An SQL statement put together from parts, whose values are bound and numbered as they are added:
/// the text never holds a value, and no placeholder is numbered by hand. It may begin with a query
/// of its own (`PostgresQuery`'s interpolation numbers its binds from `$1`): what follows is bound
/// after them.
struct Statement {
    private(set) var sql = ""
    private(set) var binds = PostgresBindings()

    init() {}

    /// A statement that begins with `query`'s text, and its binds.
    init(startingWith query: PostgresQuery) {
        sql = query.sql
        binds = query.binds
    }

    /// Appends constant SQL (never a value: ``bind(_:)`` takes those).
    mutating func append(_ text: String) {
        sql += text
    }

    /// Puts constant SQL before the text (never a value).
    mutating func prepend(_ text: String) {
        sql = text + sql
    }

    /// Binds `value` and returns its placeholder, for the caller to place in the text.
    mutating func bind(_ value: String) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    /// Binds `value` and returns its placeholder, cast to `bigint`.
    mutating func bind(_ value: Int64) -> String {
        binds.append(value)
        return "$\(binds.count)::bigint"
    }

    /// The statement to run. In debug builds it checks that every placeholder it names has a
    /// bind (a filter may bind a value that its conditions do not all use).
    var query: PostgresQuery {
        assert(
            Self.placeholders(in: sql).allSatisfy { $0 >= 1 && $0 <= binds.count },
            "placeholders \(Self.placeholders(in: sql)) for \(binds.count) binds: \(sql)")
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    /// The placeholder numbers `sql` names (`$n`), each once, in order. String literals and quoted
    /// names are not looked into.
    static func placeholders(in sql: String) -> [Int] {
        var found = Set<Int>()
        forEachPlaceholder(in: sql) { found.insert($0) }
        return found.sorted()
    }

    /// Calls `body` with the number of each placeholder of `sql`, outside string literals and
    /// quoted identifiers.
    private static func forEachPlaceholder(in sql: String, _ body: (Int) -> Void) {
        var index = sql.startIndex
        var quote: Character?
        while index < sql.endIndex {
            let character = sql[index]
            if let open = quote {
                if character == open { quote = nil }
                index = sql.index(after: index)
                continue
            }
            if character == "'" || character == "\"" {
                quote = character
                index = sql.index(after: index)
                continue
            }
            guard character == "$" else {
                index = sql.index(after: index)
                continue
            }
            var end = sql.index(after: index)
            while end < sql.endIndex, sql[end].isASCII, sql[end].isNumber { end = sql.index(after: end) }
            if end > sql.index(after: index), let number = Int(sql[sql.index(after: index)..<end]) {
                body(number)
            }
            index = end
        }
    }
}
