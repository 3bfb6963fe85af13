import Foundation

/// A JSON value with ordered object keys (JSONSerialization sorts or scrambles them).
enum JSONValue: Sendable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([(String, JSONValue)])
    case null

    var rendered: String {
        switch self {
        case .string(let text): return JSONValue.quote(text)
        case .int(let value): return String(value)
        case .double(let value):
            guard value.isFinite else { return "null" }
            if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
            return String(format: "%.3f", value)
        case .bool(let value): return value ? "true" : "false"
        case .array(let values): return "[" + values.map(\.rendered).joined(separator: ",") + "]"
        case .object(let fields):
            return "{" + fields.map { JSONValue.quote($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        case .null: return "null"
        }
    }

    private static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }

    /// Converts a JSONSerialization result.
    init(any value: Any) {
        switch value {
        case let text as String: self = .string(text)
        case let number as NSNumber:
            self = .double(number.doubleValue)
        case let array as [Any]: self = .array(array.map(JSONValue.init(any:)))
        case let object as [String: Any]: self = .object(object.sorted { $0.key < $1.key }.map { ($0.key, JSONValue(any: $0.value)) })
        default: self = .null
        }
    }

    var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    var text: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

/// One child's measurement: ordered figures.
typealias Figures = [(String, JSONValue)]

extension Array where Element == (String, JSONValue) {
    subscript(key: String) -> JSONValue? { first { $0.0 == key }?.1 }
}
