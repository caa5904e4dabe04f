import Foundation

/// The prepared-statement cache's key: an SQL text, equal to another when their bytes are (what
/// SQLite is given), hashed by its length and its first and last 32 bytes only.
///
/// Every query looks its statement up, and hashing the whole text (statements of several hundred
/// bytes, about 19 lookups an order) was about 1 % of a pass's instructions. Texts that share
/// length and both ends only meet in one bucket, where comparing the bytes tells them apart.
struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    static let sampled = 32

    func hash(into hasher: inout Hasher) {
        var text = sql
        text.withUTF8 { bytes in
            let sample = Swift.min(bytes.count, StatementKey.sampled)
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.prefix(sample))))
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(sample))))
        }
    }

    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool {
        var left = lhs.sql, right = rhs.sql
        return left.withUTF8 { l in
            right.withUTF8 { r in
                l.count == r.count && (l.count == 0 || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0)
            }
        }
    }
}
