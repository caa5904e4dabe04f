import SettleBase
import SettleLedger

/// What `settle --version` reports: enough for a bug report to say exactly what ran.
enum BuildInfo {
    /// The git commit this binary was built from. `scripts/package-deb` and
    /// `scripts/install.sh` write it into `BuildCommit.swift` for the build and restore it
    /// after; a plain `swift build` of a checkout says so instead of guessing.
    static var commit: String { buildCommit }

    /// The libraries as loaded at run time (a distribution may update them under settle).
    static var sqliteVersion: String { SQLiteDatabase.libraryVersion }
    static var curlVersion: String { LibraryVersions.curl }
    static var openSSLVersion: String { LibraryVersions.openSSL }

    static var versionText: String {
        """
        settle \(SettleVersion.number)
        commit: \(commit)
        ledger schema: \(LedgerSchema.migrations.count)
        SQLite \(sqliteVersion), libcurl \(curlVersion), \(openSSLVersion)
        """
    }
}
