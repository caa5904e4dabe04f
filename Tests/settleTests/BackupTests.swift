import Foundation
import SettleApp
import XCTest
import SettleLedger

/// Backups, migrations and who may read the ledger: what an operator relies on when upgrading
/// or restoring.
final class BackupTests: EndToEndTestCase {
    func testBackup_copiesTheLiveLedger_andVerifyBackupReadsItsContents() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        try settle(expecting: 0, ["reconcile"])
        try enqueueValid("o-2", transaction: "2000000000000002")
        let destination = world.folder + "/copy.sqlite3"
        let backup = try settle(expecting: 0, ["backup", destination])
        let schema = LedgerSchema.migrations.count
        XCTAssertTrue(backup.stdout.contains("OK, schema \(schema), 2 orders (1 pending, 1 finished), 1 grant,"),
                      backup.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination + "-wal"), "a backup is one self-contained file")
        let verify = try settleWithoutConfig(["verify-backup", destination])
        XCTAssertEqual(verify.status, 0, verify.stderr)
        XCTAssertTrue(verify.stdout.contains("integrity ok"), verify.stdout)
        // The copy is a ledger settle can work with: the same orders.
        let copy = try SQLiteLedger(readOnlyPath: destination)
        XCTAssertEqual(try copy.summary(OrderFilter()).orders.map(\.orderId).sorted(), ["o-1", "o-2"])
    }

    func testBackup_neverOverwritesAnExistingFile() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        let destination = try world.write("existing.sqlite3", "precious")
        let result = try settle(["backup", destination])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("already exists"), result.stderr)
        XCTAssertEqual(try String(contentsOfFile: destination, encoding: .utf8), "precious")
    }

    func testVerifyBackup_ofATruncatedOrForeignFile_exits65() throws {
        try enqueueValid("o-1", transaction: "2000000000000001")
        let destination = world.folder + "/copy.sqlite3"
        try settle(expecting: 0, ["backup", destination])
        let data = try XCTUnwrap(bytes(destination))
        let truncated = world.folder + "/truncated.sqlite3"
        _ = FileManager.default.createFile(atPath: truncated, contents: data.prefix(data.count / 2))
        let garbage = try world.write("garbage.sqlite3", String(repeating: "not a database ", count: 400))
        for path in [truncated, garbage] {
            let result = try settleWithoutConfig(["verify-backup", path])
            XCTAssertEqual(result.status, 65, "\(path): \(result.stdout) \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("not a usable backup"), result.stderr)
        }
    }

    /// A ledger one schema behind: the history of migration 3 undone by hand is not possible,
    /// so a ledger is built with only the first two migrations' SQL.
    func makeSchema2Ledger() throws {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readWrite)
        try database.execute(LedgerSchema.migrations[0])
        try database.execute(LedgerSchema.migrations[1])
        try database.execute("PRAGMA user_version = 2")
        try database.execute("INSERT INTO orders(order_id, user_id, product_id, transaction_id) VALUES ('o-old', 'u-1', 'p', '1')")
        try database.close()
    }

    func testSupportAndBackendCommandsOnAnOlderLedger_grantRecordedAndAssignToo_refuseAndPointAtMigrate_withoutChangingIt() throws {
        try makeSchema2Ledger()
        let before = try ledgerRows()
        let receipt = try receiptFile("new", world.receipt("new"))
        for arguments in [["retry", "o-old"], ["resolve", "o-old", "--as", "wont_grant", "--note", "x"],
                          ["enqueue", "--order", "o-new", "--user", "u", "--product", world.coins, "--receipt-file", receipt],
                          ["grant-recorded", "--transaction", "2000000000000009"], ["assign", "o-old", "--user", "u-2"]] {
            let result = try settle(arguments)
            XCTAssertEqual(result.status, 74, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("run `settle migrate`"), result.stderr)
        }
        XCTAssertEqual(try ledgerRows(), before)
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        XCTAssertEqual(try database.query("PRAGMA user_version").first?.int("user_version"), 2)
    }

    func testMigrate_backsTheLedgerUpFirst_thenMigratesIt() throws {
        try makeSchema2Ledger()
        let result = try settle(expecting: 0, ["migrate"])
        XCTAssertTrue(result.stdout.contains("from schema 2 to \(LedgerSchema.migrations.count)"), result.stdout)
        let backup = world.ledgerPath + ".schema-2.backup"
        let check = try settleWithoutConfig(["verify-backup", backup])
        XCTAssertNotNil(check.stdout.range(of: "schema 2, 1 order[ ,]", options: .regularExpression),
                        check.stdout + check.stderr)
        XCTAssertEqual(try settle(expecting: 0, ["migrate"]).stdout, "ledger \(world.ledgerPath) is at schema \(LedgerSchema.migrations.count): nothing to do\n")
    }

    func testStatusOnALedgerThisUserMayNotRead_saysPermissionDeniedAndWhatToDo() throws {
        guard getuid() != 0 else {
            // root reads everything; prove the message through a user who cannot, via setpriv.
            try enqueueValid("o-1", transaction: "2000000000000001")
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: world.folder)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: world.configPath)
            let config = try world.write("/tmp/settle-permission-\(getpid()).json",
                                         try String(contentsOfFile: world.configPath, encoding: .utf8))
            defer { try? FileManager.default.removeItem(atPath: config) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", SettleBinary.url.path, "status", "-c", config]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = Pipe()
            try process.run()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 74, stderr)
            XCTAssertTrue(stderr.contains("permission denied"), stderr)
            XCTAssertTrue(stderr.contains("settle-support"), stderr)
            return
        }
        try enqueueValid("o-1", transaction: "2000000000000001")
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: world.ledgerPath)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: world.ledgerPath) }
        let result = try settle(["status"])
        XCTAssertEqual(result.status, 74)
        XCTAssertTrue(result.stderr.contains("permission denied"), result.stderr)
    }
}
