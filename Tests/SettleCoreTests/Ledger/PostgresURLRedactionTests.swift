import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleConfig
import SettleLedger

/// A PostgreSQL URL as settle prints it anywhere (check-config, migrate, ledger copy, the
/// `daemon.started` line, status): libpq's own reading of it (SettleLedger), never a password;
/// the configuration holds it as a secret that prints as `<redacted>`.
final class PostgresURLRedactionTests: XCTestCase {
    func testRedacted_dropsEveryPasswordLibpqFinds_andKeepsWhatIdentifiesTheDatabase() {
        let cases: [(String, String)] = [
            ("postgresql://settle@db.internal/settle?sslmode=verify-full", "postgresql://settle@db.internal/settle?sslmode=verify-full"),
            ("postgresql://settle:pw-userinfo@db.internal:5432/settle", "postgresql://settle@db.internal:5432/settle?password=redacted"),
            ("postgresql://settle@db.internal/settle?password=pw-query&sslmode=require",
             "postgresql://settle@db.internal/settle?sslmode=require&password=redacted"),
            ("postgresql://settle:pw-multi@h1:5432,h2:5433/settle?target_session_attrs=read-write",
             "postgresql://settle@h1:5432,h2:5433/settle?target_session_attrs=read-write&password=redacted"),
            ("postgres://u:pw%40encoded@[::1]:5433/db", "postgresql://u@[::1]:5433/db?password=redacted"),
            ("postgresql:///settle?host=/var/run/postgresql&password=pw-socket", "postgresql:///settle?host=/var/run/postgresql&password=redacted"),
            ("postgresql://settle@db.internal/settle?sslmode=verify-full&sslkey=/etc/settle/client.key&sslpassword=pw-sslkey",
             "postgresql://settle@db.internal/settle?sslmode=verify-full&sslkey=/etc/settle/client.key&sslpassword=redacted"),
            ("postgresql://settle:pw-both@db.internal/settle?sslpassword=pw-sslkey",
             "postgresql://settle@db.internal/settle?password=redacted&sslpassword=redacted"),
            ("postgresql://u:pw-broken@host:notaport:/db?%zz", "postgresql://(a URL libpq cannot read; not shown)"),
        ]
        for (url, shown) in cases {
            let redacted = PostgresLedger.redacted(url)
            XCTAssertEqual(redacted, shown, url)
            XCTAssertFalse(redacted.contains("pw"), redacted)
        }
    }

    func testConfiguredLedgerURL_isKeptWhole_forConnecting_butDisplayedWithoutItsPassword() throws {
        let world = try TestWorld()
        let url = "postgresql://settle:pw-userinfo@db1,db2/settle?password=pw-query"
        try world.writeConfig(overrides: [("ledger", .string(url))])
        let configuration = try world.configuration()
        XCTAssertEqual(configuration.postgresLedger?.url.value, url)
        XCTAssertEqual(configuration.ledgerLocation, "postgresql://settle@db1,db2/settle?password=redacted",
                       "what check-config, migrate and the daemon.started line print")
    }

    func testConfiguredLedgerURL_whenTheConfigurationIsPrinted_showsNoPassword() throws {
        let world = try TestWorld()
        try world.writeConfig(overrides: [("ledger", .object([("url", .string("postgresql://settle:pw-userinfo@db/settle?password=pw-query"))]))])
        let configuration = try world.configuration()
        for printed in [String(describing: configuration), String(reflecting: configuration),
                        String(describing: configuration.postgresLedger as Any)] {
            XCTAssertFalse(printed.contains("pw-"), printed)
        }
    }
}
