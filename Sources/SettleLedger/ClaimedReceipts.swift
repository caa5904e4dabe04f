import Foundation
import SettleBase
import SettleModel

/// The stored receipts of orders just claimed, read in the claim's own transaction (one
/// statement for the batch, on the connection that wrote the claim) and attached to the orders
/// (`Order.storedReceipt`): verification then needs no read of its own per order.
package enum ClaimedReceipts {
    /// The statement that reads the receipts `orders` name and its arguments; nil when none names one.
    static func query(for orders: [Order]) -> (sql: String, hashes: [String])? {
        var hashes: [String] = []
        var seen = Set<String>()
        for hash in orders.lazy.compactMap(\.receiptSHA256) where seen.insert(hash).inserted { hashes.append(hash) }
        guard !hashes.isEmpty else { return nil }
        let placeholders = Array(repeating: "?", count: hashes.count).joined(separator: ", ")
        return ("SELECT sha256, data FROM receipts WHERE sha256 IN (\(placeholders))", hashes)
    }

    /// Each order's receipt from `rows` (`sha256`, `data`), where its text matches its hash.
    static func attach(_ rows: [any LedgerRow], to orders: inout [Order]) {
        var found: [String: String] = [:]
        for row in rows {
            guard let hash = row.string("sha256"), let data = row.string("data") else { continue }
            found[hash] = data
        }
        for index in orders.indices {
            guard let hash = orders[index].receiptSHA256, let data = found[hash] else { continue }
            orders[index].storedReceipt = checked(data, sha256: hash)
        }
    }

    /// `stored` when it is the text `sha256` names (a backend may have written the row by hand).
    package static func checked(_ stored: String, sha256: String) -> String? {
        SHA256.hex(Data(stored.utf8)) == sha256.lowercased() ? stored : nil
    }
}
