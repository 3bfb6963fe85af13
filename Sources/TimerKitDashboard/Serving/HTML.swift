import Foundation

/// A piece of HTML. Text interpolated into it is escaped (`&`, `<`, `>`, `"`, `'`), so a key,
/// handler, payload or error can never become markup; only another ``HTML`` value goes in as it
/// is. Attribute values are always written in double quotes.
struct HTML: ExpressibleByStringInterpolation, Sendable {
    var text: String

    init(stringLiteral value: String) { text = value }

    init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    init(raw: String) { text = raw }

    struct Interpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity * 2) }

        mutating func appendLiteral(_ literal: String) { text += literal }

        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }

        mutating func appendInterpolation(_ value: HTML) { text += value.text }

        mutating func appendInterpolation(_ values: [HTML]) {
            for value in values { text += value.text }
        }

        mutating func appendInterpolation(_ value: Int) { text += String(value) }

        mutating func appendInterpolation(_ value: Int64) { text += String(value) }
    }

    /// `text` with the five characters that can end a text or an attribute replaced by entities.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func + (lhs: HTML, rhs: HTML) -> HTML { HTML(raw: lhs.text + rhs.text) }
}

extension Array where Element == HTML {
    func joined() -> HTML { HTML(raw: map(\.text).joined()) }
}
