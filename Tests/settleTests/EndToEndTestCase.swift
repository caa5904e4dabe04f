import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
#if canImport(Glibc)
import Glibc
import SettleLedger
import SettleAppStoreSimulator
#endif

/// A test that drives the real `settle` binary against a throwaway installation (`world`):
/// a configuration, a shared secret, hook scripts, a ledger and the Apple simulator on loopback.
///
/// Every command's stdout and stderr are kept in `transcript`, so a test can prove that
/// nothing it ran ever printed the shared secret.
class EndToEndTestCase: XCTestCase {
    nonisolated(unsafe) var world: TestWorld!
    nonisolated(unsafe) var transcript: [String] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        world = try TestWorld()
        transcript = []
        try world.writeConfig()
    }

    override func tearDownWithError() throws {
        world = nil
        try super.tearDownWithError()
    }

    // MARK: - Running settle

    /// Runs `settle <arguments> --config <world's config>`.
    @discardableResult
    func settle(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
                config: String? = nil) throws -> SettleBinary.Result {
        try settleWithoutConfig(arguments + ["--config", config ?? world.configPath], stdin: stdin, environment: environment)
    }

    /// Runs `settle <arguments>` exactly as given.
    @discardableResult
    func settleWithoutConfig(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:],
                             workingDirectory: String? = nil) throws -> SettleBinary.Result {
        let result = try SettleBinary.run(arguments, stdin: stdin, environment: environment,
                                          workingDirectory: workingDirectory ?? world?.folder)
        transcript.append(result.stdout)
        transcript.append(result.stderr)
        return result
    }

    /// Runs settle and fails the test unless it exits with `code`.
    @discardableResult
    func settle(expecting code: Int32, _ arguments: [String], stdin: Data? = nil, config: String? = nil,
                file: StaticString = #filePath, line: UInt = #line) throws -> SettleBinary.Result {
        let result = try settle(arguments, stdin: stdin, config: config)
        XCTAssertEqual(result.status, code, "settle \(arguments.joined(separator: " ")) exited \(result.status)\nstdout: \(result.stdout)\nstderr: \(result.stderr)",
                       file: file, line: line)
        return result
    }

    // MARK: - Orders

    /// A purchase of `product` (coins by default) with this Apple transaction id.
    func purchase(_ transactionId: String, product: String? = nil, cancelled: Bool = false) -> SimulatedTransaction {
        SimulatedTransaction(productId: product ?? world.coins, transactionId: transactionId,
                             cancellationDateMs: cancelled ? 1_764_410_700_000 : nil)
    }

    /// Writes `receipt` into a file of the world's folder and returns its path.
    func receiptFile(_ name: String, _ receipt: String) throws -> String {
        try world.write("receipt-\(name).b64", receipt + "\n", mode: 0o644)
    }

    /// `settle enqueue` through the binary; fails the test unless it exits 0.
    @discardableResult
    func enqueue(_ orderId: String, user: String = "u-1", product: String? = nil, transaction: String? = nil,
                 receipt: String?, file: StaticString = #filePath, line: UInt = #line) throws -> SettleBinary.Result {
        var arguments = ["enqueue", "--order", orderId, "--user", user, "--product", product ?? world.coins]
        if let transaction { arguments += ["--transaction", transaction] }
        if let receipt { arguments += ["--receipt-file", try receiptFile(orderId, receipt)] }
        return try settle(expecting: 0, arguments, file: file, line: line)
    }

    /// Scripts a genuine production receipt holding one purchase and enqueues an order for it.
    func enqueueValid(_ orderId: String, transaction: String, user: String = "u-1", product: String? = nil,
                      withTransactionId: Bool = true, answers: [SimulatedAnswer] = [],
                      file: StaticString = #filePath, line: UInt = #line) throws {
        let receipt = world.scriptReceipt(orderId, [purchase(transaction, product: product)], answers: answers)
        try enqueue(orderId, user: user, product: product, transaction: withTransactionId ? transaction : nil,
                    receipt: receipt, file: file, line: line)
    }

    /// Enqueues an order whose receipt Apple cannot authenticate (21003).
    func enqueueForged(_ orderId: String, user: String = "u-1", file: StaticString = #filePath, line: UInt = #line) throws {
        world.simulator.script(world.receipt(orderId), .forged)
        try enqueue(orderId, user: user, receipt: world.receipt(orderId), file: file, line: line)
    }

    // MARK: - Status

    /// `settle status [arguments] --json`, parsed.
    func statusJSON(_ arguments: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let result = try settle(expecting: 0, ["status"] + arguments + ["--json"], file: file, line: line)
        return try JSONValue.parse(result.stdout)
    }

    /// `settle status ORDER_ID --json`, parsed: the order object with its history.
    /// The order as `settle status ID --json` gives it, without its verdict (whose words name
    /// times relative to now, so two reads a second apart differ; VerdictEverywhereTests checks it).
    func order(_ orderId: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let json = try statusJSON([orderId], file: file, line: line)
        guard case let .object(members) = json else { return json }
        return .object(members.filter { $0.0 != "verdict" })
    }

    /// The history entries of an order.
    func history(_ orderId: String, file: StaticString = #filePath, line: UInt = #line) throws -> [JSONValue] {
        try order(orderId, file: file, line: line)["history"]?.arrayValue ?? []
    }

    /// The order ids listed by `settle status [arguments] --json`, sorted.
    func listedOrderIds(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let orders = try statusJSON(arguments, file: file, line: line)["orders"]?.arrayValue ?? []
        return orders.compactMap { $0["order_id"]?.looseString }.sorted()
    }

    func state(_ orderId: String, file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        try order(orderId, file: file, line: line)["state"]?.looseString
    }

    func attempts(_ orderId: String, file: StaticString = #filePath, line: UInt = #line) throws -> Int? {
        try order(orderId, file: file, line: line)["attempts"]?.looseString.flatMap { Int($0) }
    }

    // MARK: - The ledger file itself

    /// Every row of every table of the ledger, each row as the SQL literals of its columns,
    /// read in-process through a read-only connection that is closed again.
    func ledgerRows(_ tables: [String]? = nil) throws -> [String: [String]] {
        let database = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        defer { try? database.close() }
        let names = try tables ?? database.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .compactMap { $0.string("name") }
        var rows: [String: [String]] = [:]
        for table in names {
            let columns = try database.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)])
                .compactMap { $0.string("name") }
            XCTAssertFalse(columns.isEmpty, "table \(table) has no columns")
            let select = columns.map { "quote(\"\($0)\")" }.joined(separator: " || '|' || ")
            rows[table] = try database.query("SELECT \(select) AS row FROM \"\(table)\" ORDER BY rowid").compactMap { $0.string("row") }
        }
        return rows
    }

    /// The raw bytes of a file, nil when it does not exist.
    func bytes(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    // MARK: - Waiting

    /// Polls until `condition` holds or `seconds` have passed; returns whether it held.
    func eventually(within seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    // MARK: - Formats

    static let rfc3339UTC = try! NSRegularExpression(pattern: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"#)

    func isRFC3339UTC(_ text: String) -> Bool {
        Self.rfc3339UTC.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// Asserts that `value` is an RFC 3339 UTC time (`...Z`), or null when `nullable`.
    func assertTime(_ value: JSONValue?, nullable: Bool, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        switch value {
        case .string(let text)?:
            XCTAssertTrue(isRFC3339UTC(text), "\(what) is \(text), not an RFC 3339 UTC time", file: file, line: line)
        case .null?:
            XCTAssertTrue(nullable, "\(what) is null", file: file, line: line)
        default:
            XCTFail("\(what) is \(String(describing: value)), expected a time\(nullable ? " or null" : "")", file: file, line: line)
        }
    }

    /// The non-empty lines of `text`.
    func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }
}
