import Foundation

/// A durable timer's key as the stores compare it: by its UTF-8 bytes.
///
/// Swift's `String` compares by canonical equivalence, so `"café"` written with U+00E9 and with
/// `e` + U+0301 are equal strings, while SQLite and PostgreSQL keep them as two keys. Every map the
/// runner keeps by key uses this type, so that a key means the same timer in memory as in the
/// store: NFC and NFD spellings are different keys everywhere (the durable-timers article says so).
package struct StoredKey: Hashable, Sendable, CustomStringConvertible {
    /// The key as given.
    package let string: String

    package init(_ string: String) {
        var string = string
        string.makeContiguousUTF8()
        self.string = string
    }

    package static func == (lhs: StoredKey, rhs: StoredKey) -> Bool {
        let (left, right) = (lhs.string.utf8, rhs.string.utf8)
        guard left.count == right.count else { return false }
        // Both are contiguous (made so at init): one memcmp.
        let equal = left.withContiguousStorageIfAvailable { left in
            right.withContiguousStorageIfAvailable { right in
                left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
        return (equal ?? nil) ?? left.elementsEqual(right)
    }

    package func hash(into hasher: inout Hasher) {
        let utf8 = string.utf8
        hasher.combine(utf8.count)
        if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
    }

    package var description: String { string }
}
