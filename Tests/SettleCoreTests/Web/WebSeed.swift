import Foundation
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleLedger

/// A small ledger with every kind of order support meets, and the secrets it holds, so that a
/// test can look for each secret on every page.
struct WebSeed {
    static let hostile = "<script>alert(\"order\")</script>"
    static let hookOutput = "<script>document.title='pwned'</script>"
    static let token = "PLAYTOKEN-secret-0123456789abcdefghijklmnopqrstuvwxyz"
    static let signed = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMjAwIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    static let payload = "eyJhbGciOiJFUzI1NiJ9.eyJub3RpZmljYXRpb25UeXBlIjoiUkVGVU5EIn0.UEFZTE9BRC1TSUdOQVRVUkU"
    static let notification = "5f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

    /// The secrets no page may show: receipts, the signed transaction, the purchase token, the
    /// notification's signed payload, the shared secret.
    let secrets: [String]

    /// o-finished (delivered an hour ago), the hostile id (needs_attention, hook_refused, a
    /// hostile hook output), o-rejected, o-unclaimed (no user), o-play (Google Play, token),
    /// o-signed (a signed transaction), and a notification for o-finished.
    init(_ test: WebConsoleTestCase, _ engine: WebConsoleTestCase.Engine) throws {
        let ledger = engine.ledger
        let now = test.world.time.unixSeconds
        try test.enqueue(ledger, "o-finished", user: "u-1", transaction: "100")
        try test.enqueue(ledger, Self.hostile, user: "u-2", transaction: "101")
        try test.enqueue(ledger, "o-rejected", user: "u-1", transaction: "102")
        try test.enqueue(ledger, "o-unclaimed", user: "u-3", transaction: "103")
        _ = try ledger.enqueue(NewOrder(orderId: "o-play", userId: "u-4", productId: test.world.coins, transactionId: "GPA.1234-5678-9012-34567",
                                        store: .googlePlay, purchaseToken: PurchaseToken(Self.token)))
        _ = try ledger.enqueue(NewOrder(orderId: "o-signed", userId: "u-5", productId: test.world.coins, signedTransaction: Self.signed))
        let hostile = Self.hostile.replacingOccurrences(of: "'", with: "''")
        try engine.execute("""
            UPDATE orders SET state = 'finished', finished_at = \(now - 3600), updated_at = \(now - 3600), attempts = 1,
                verified_transaction_id = '100', original_transaction_id = '100', environment = 'Production' WHERE order_id = 'o-finished';
            UPDATE orders SET state = 'needs_attention', reason = 'hook_refused', last_error = '<img src=x onerror=alert(1)>', updated_at = \(now - 60)
                WHERE order_id = '\(hostile)';
            INSERT INTO history(order_id, at, kind, outcome, hook_exit, detail)
                VALUES ('\(hostile)', \(now - 60), 'delivery', 'refused', 65, 'hook refused' || char(10) || '\(Self.hookOutput.replacingOccurrences(of: "'", with: "''"))');
            UPDATE orders SET state = 'rejected', reason = 'receipt_invalid', updated_at = \(now - 7200) WHERE order_id = 'o-rejected';
            UPDATE orders SET user_id = '', state = 'needs_attention', reason = 'unclaimed_purchase', updated_at = \(now - 30)
                WHERE order_id = 'o-unclaimed';
            INSERT INTO notifications(uuid, type, subtype, environment, transaction_id, order_id, source, received_at, outcome, detail, payload)
                VALUES ('\(Self.notification)', 'REFUND', NULL, 'Production', '100', 'o-finished', 'endpoint', \(now - 600), 'revoked',
                        'refund of <b>100</b>', '\(Self.payload)');
            """.replacingOccurrences(of: "char(10)", with: engine.name == "SQLite" ? "char(10)" : "chr(10)"))
        secrets = [test.world.receipt("o-finished"), test.world.receipt(Self.hostile), test.world.receipt("o-rejected"), Self.token,
                   Self.signed, Self.payload, test.world.sharedSecret]
    }
}
