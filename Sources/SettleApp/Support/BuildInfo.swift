import CCurl
import COpenSSL
import CSQLite
import SettleBase
import SettleLedger

/// What `settle --version` reports: enough for a bug report to say exactly what ran.
enum BuildInfo {
    /// The git commit this binary was built from. `scripts/package-deb` and
    /// `scripts/install.sh` write it into `BuildCommit.swift` for the build and restore it
    /// after; a plain `swift build` of a checkout says so instead of guessing.
    static var commit: String { buildCommit }

    /// The libraries as loaded at run time (a distribution may update them under settle).
    static var sqliteVersion: String { String(cString: sqlite3_libversion()) }
    static var curlVersion: String { settle_curl_version_info().pointee.version.map { String(cString: $0) } ?? "?" }
    static var openSSLVersion: String { String(cString: OpenSSL_version(Int32(OPENSSL_VERSION))) }

    static var versionText: String {
        """
        settle \(SettleVersion.number)
        commit: \(commit)
        ledger schema: \(LedgerSchema.migrations.count)
        SQLite \(sqliteVersion), libcurl \(curlVersion), \(openSSLVersion)
        """
    }
}
