import Foundation
import GRDB

/// Reads a row's columns without GRDB's conversions, which trap on a value of the wrong type:
/// a value that does not convert reads as a placeholder and is noted as a defect.
struct SQLiteRowReader: StoredColumnReader {
    let row: Row
    var defects: [String] = []

    mutating func optionalInteger(_ column: String) -> Int64? {
        let value: DatabaseValue = row[column] ?? .null
        if value.isNull { return nil }
        if case .int64(let integer) = value.storage { return integer }
        return wrong(column, value, nil)
    }

    mutating func optionalText(_ column: String) -> String? {
        let value: DatabaseValue = row[column] ?? .null
        switch value.storage {
        case .null: return nil
        case .string(let text): return text
        case .blob(let data): return String(data: data, encoding: .utf8) ?? wrong(column, value, nil)
        default: return wrong(column, value, nil)
        }
    }

    mutating func blob(_ column: String) -> Data {
        let value: DatabaseValue = row[column] ?? .null
        switch value.storage {
        case .blob(let data): return data
        case .string(let text): return Data(text.utf8)
        default: return wrong(column, value, Data())
        }
    }

    mutating func flag(_ column: String) -> Bool { integer(column) != 0 }

    private mutating func wrong<T>(_ column: String, _ value: DatabaseValue, _ placeholder: T) -> T {
        defects.append("\(column) holds \(value.description.prefix(64)), not a value of its type")
        return placeholder
    }
}
