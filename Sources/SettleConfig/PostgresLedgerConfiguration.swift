import Foundation

/// `"ledger": "postgresql://settle@db/settle"`, or `"ledger": {"url": ..., "password_file": ...}`:
/// the ledger is a PostgreSQL database, shared by every `settle run` that names it.
package struct PostgresLedgerConfiguration: Sendable, Equatable {
    /// A libpq connection URI (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING).
    /// It may hold a password (in the user info, `?password=`, after any host of a multi-host
    /// URL), so it is kept as a `Secret`: printing the configuration never shows it. It is
    /// shown only through SettleLedger (`Configuration.ledgerLocation`), where libpq reads it
    /// and the password is left out.
    package var url: Secret
    /// The role's password, kept out of the JSON like every other secret.
    package var passwordFile: SecretFile?

    package static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }
}
