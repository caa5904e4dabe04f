import Foundation
import SettleApp
import XCTest
import SettleLedger

/// The PostgreSQL the tests use: `SETTLE_TEST_POSTGRES_URL` (CI sets it), else a throwaway
/// cluster that `scripts/test-postgres.sh start` makes on 127.0.0.1:55432 the first time a test
/// needs one (so `swift test` works on any machine with Debian's `postgresql` installed; the
/// cluster stays for the next run, `scripts/test-postgres.sh stop` removes it). Each test gets a
/// schema of its own.
///
/// Without PostgreSQL installed, the PostgreSQL tests fail saying how to get it: never a skip,
/// never a green run that silently tested only SQLite.
package enum TestPostgres {
    package static let missing = "PostgreSQL not available: install it (apt-get install postgresql), or set SETTLE_TEST_POSTGRES_URL, "
        + "or run `eval \"$(scripts/test-postgres.sh start)\"` to see why it does not start"

    package static var url: String? {
        if let given = ProcessInfo.processInfo.environment["SETTLE_TEST_POSTGRES_URL"], !given.isEmpty { return given }
        return started
    }

    /// A cluster started by the script, once per test process; nil when PostgreSQL is not installed.
    private static let started: String? = {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/test-postgres.sh").standardized.path
        // Its output goes to a file, not a pipe (the server it starts in the background keeps
        // the descriptors it inherited, so a pipe would never reach end-of-file), and it is
        // waited for with waitpid: plain POSIX, outside Foundation's process monitoring.
        let outputPath = NSTemporaryDirectory() + "settle-test-postgres-\(getpid()).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let argv = ["/bin/bash", "-c", "exec /bin/bash \"$0\" start > \"$1\" 2>/dev/null < /dev/null", script, outputPath]
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", nil, nil, &cArguments, environ) == 0 else { return nil }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // Exited (low 7 bits clear) with code 0.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0, let data = FileManager.default.contents(atPath: outputPath) else {
            return nil
        }
        // The script prints `export SETTLE_TEST_POSTGRES_URL='<url>'`.
        let text = String(decoding: data, as: UTF8.self)
        guard let start = text.range(of: "SETTLE_TEST_POSTGRES_URL='"), let end = text[start.upperBound...].firstIndex(of: "'") else {
            return nil
        }
        return String(text[start.upperBound..<end])
    }()

    /// Why a PostgreSQL test could not run: it fails (never skips), saying what to do.
    package struct Unavailable: Error, CustomStringConvertible {
        package var description: String { TestPostgres.missing }
    }

    /// The server's URL; a test without one fails.
    package static func requireURL() throws -> String {
        guard let url else { throw Unavailable() }
        return url
    }

    /// A fresh, empty schema for one test and a URL whose connections use it; the schema is
    /// dropped by `drop(schema:)`.
    package static func freshSchema() throws -> (url: String, schema: String) {
        let base = try requireURL()
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let admin = try PostgresConnection(url: base)
        defer { admin.close() }
        try admin.execute("CREATE SCHEMA \(schema)")
        let separator = base.contains("?") ? "&" : "?"
        return (base + separator + "options=-csearch_path%3D\(schema)", schema)
    }

    package static func drop(schema: String) {
        guard let base = url, let admin = try? PostgresConnection(url: base) else { return }
        try? admin.execute("SET client_min_messages = warning")
        try? admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        admin.close()
    }
}
