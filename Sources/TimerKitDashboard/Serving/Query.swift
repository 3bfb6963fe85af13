import Foundation

/// Reading and writing `application/x-www-form-urlencoded` (query strings and form bodies).
enum FormEncoding {
    /// The pairs of `text` (`a=1&b=x%20y`), decoded; `+` is a space. A pair that does not decode
    /// is left out.
    static func pairs(_ text: Substring) -> [(String, String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { return nil }
            let value = parts.count > 1 ? decode(parts[1]) : ""
            return value.map { (name, $0) }
        }
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// What may stand unescaped in a query value.
    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")

    /// `pairs` as a query string (without the `?`), values percent-encoded; empty values left out.
    static func query(_ pairs: [(String, String?)]) -> String {
        pairs.compactMap { name, value in
            guard let value, !value.isEmpty else { return nil }
            return "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "")"
        }.joined(separator: "&")
    }
}
