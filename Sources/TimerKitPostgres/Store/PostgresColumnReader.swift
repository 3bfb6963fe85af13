import Foundation
import PostgresNIO
import TimerKitDurable

/// Reads a row's record columns by name, at their places in ``PostgresTimerStore/recordColumns``
/// (a statement may return more columns after them), without throwing: a value that does not
/// decode as its column's type reads as a placeholder and is noted as a defect.
struct PostgresColumnReader: StoredColumnReader {
    let row: PostgresRandomAccessRow
    var defects: [String] = []

    /// Each record column's place.
    private static let places = Dictionary(uniqueKeysWithValues: PostgresTimerStore.recordColumns.enumerated().map { ($1, $0) })

    init(_ row: PostgresRow) {
        self.row = row.makeRandomAccess()
    }

    mutating func optionalInteger(_ column: String) -> Int64? { value(column, Int64.self) }

    mutating func optionalText(_ column: String) -> String? { value(column, String.self) }

    mutating func blob(_ column: String) -> Data { value(column, Data.self) ?? missing(column, Data()) }

    mutating func flag(_ column: String) -> Bool { value(column, Bool.self) ?? missing(column, false) }

    /// The value in `column`: `nil` for NULL, or for a value that does not decode (noted).
    private mutating func value<Value: PostgresDecodable>(_ column: String, _ type: Value.Type) -> Value? {
        guard let index = Self.places[column], index < row.count else {
            defects.append("\(column) is not among the row's columns")
            return nil
        }
        let cell = row[index]
        guard cell.bytes != nil else { return nil }
        do {
            return try cell.decode(Value.self)
        } catch {
            defects.append("\(column) holds a \(cell.dataType) value that does not read as \(Value.self)")
            return nil
        }
    }
}
