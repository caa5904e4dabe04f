import Foundation
import SettleCore
import XCTest

/// The PostgreSQL the tests use: `SETTLE_TEST_POSTGRES_URL` (CI sets it; a developer gets one
/// with `eval "$(scripts/test-postgres.sh start)"`). Each test gets a schema of its own.
///
/// Without it, one test fails saying so (`PostgresAvailabilityTests`) and the PostgreSQL tests
/// are skipped with the same words: one red line that says what to do, not a hundred, and
/// never a green run that silently tested only SQLite. `SETTLE_TEST_SKIP_POSTGRES=1` is the
/// explicit opt-out (a machine that cannot run PostgreSQL): then the check is skipped too.
public enum TestPostgres {
    public static let missing = "PostgreSQL not available: set SETTLE_TEST_POSTGRES_URL or run "
        + "`eval \"$(scripts/test-postgres.sh start)\"` (or set SETTLE_TEST_SKIP_POSTGRES=1 to skip the PostgreSQL tests on purpose)"

    public static var url: String? {
        ProcessInfo.processInfo.environment["SETTLE_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public static var optedOut: Bool { ProcessInfo.processInfo.environment["SETTLE_TEST_SKIP_POSTGRES"] == "1" }

    /// The server's URL, or a skip that says why.
    public static func requireURL() throws -> String {
        guard let url else { throw XCTSkip(missing) }
        return url
    }

    /// A fresh, empty schema for one test and a URL whose connections use it; the schema is
    /// dropped by `drop(schema:)`.
    public static func freshSchema() throws -> (url: String, schema: String) {
        let base = try requireURL()
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try PostgresConnection(url: base)
        defer { admin.close() }
        try admin.execute("CREATE SCHEMA \(schema)")
        let separator = base.contains("?") ? "&" : "?"
        return (base + separator + "options=-csearch_path%3D\(schema)", schema)
    }

    public static func drop(schema: String) {
        guard let base = url, let admin = try? PostgresConnection(url: base) else { return }
        try? admin.execute("SET client_min_messages = warning")
        try? admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        admin.close()
    }
}
