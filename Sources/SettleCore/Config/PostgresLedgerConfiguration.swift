/// `"ledger": "postgresql://settle@db/settle"`, or `"ledger": {"url": ..., "password_file": ...}`:
/// the ledger is a PostgreSQL database, shared by every `settle run` that names it.
public struct PostgresLedgerConfiguration: Sendable, Equatable {
    /// A libpq connection URI (https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING).
    public var url: String
    /// The role's password, kept out of the JSON like every other secret.
    public var passwordFile: SecretFile?

    static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }
}
