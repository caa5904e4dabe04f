import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase
import SettleModel
import SettleAppStore
#if canImport(Glibc)
import Glibc
import SettleLedger
import SettleAppStoreSimulator
import SettleAppStoreModule
#endif

/// A running `settle run` with the notifications endpoint on a kernel-chosen loopback port, the
/// Server API on the simulator and user ids that are the buyers' appAccountTokens; on the SQLite
/// ledger, or on PostgreSQL in the subclasses that set `postgres` (the same tests, both engines).
class NotificationTestCase: EndToEndTestCase {
    var daemons: [SettleBinary.Running] = []
    /// This test's PostgreSQL schema, when the ledger is on PostgreSQL.
    var postgres: (url: String, schema: String)?
    /// The buyer: user ids are appAccountTokens (`user_binding.app_account_token: "user_id"`).
    let buyer = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"
    var nowMs: Int64 { world.time.unixSeconds * 1000 }

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        postgres.map { TestPostgres.drop(schema: $0.schema) }
        try super.tearDownWithError()
    }

    /// How many rows a table of the ledger holds, whichever engine.
    func rowCount(_ table: String) throws -> Int {
        Int(try ledger().reading { try $0.query("SELECT count(*) AS n FROM \(table)").first?.int("n") } ?? -1)
    }

    /// The ledger the daemon uses, opened in the test on the test clock.
    func ledger() throws -> any SettleLedger {
        if let postgres { return try PostgresLedger(url: postgres.url, time: world.time) }
        return try world.ledger()
    }

    /// settle.json with server_api, notifications and the given extra sections.
    func writeNotificationConfig(hook: String? = nil, acceptSandbox: Bool = true, historyInterval: Double = 3600,
                                 timeoutSeconds: Int = 10, extra: [(String, JSONValue)] = [],
                                 delivery: JSONValue? = nil) throws {
        var overrides: [(String, JSONValue)] = [
            ("notifications", .object([("listen", .string("127.0.0.1:0")), ("timeout_seconds", .number(timeoutSeconds)),
                                       ("history_interval_seconds", .number(historyInterval))])),
            ("user_binding", .object([("app_account_token", .string("user_id"))])),
        ]
        if let delivery { overrides.append(("delivery", delivery)) }
        if let postgres { overrides.append(("ledger", .string(postgres.url))) }
        try world.writeConfig(hook: hook, acceptSandbox: acceptSandbox, receiptAPI: true, serverAPI: true,
                              schedule: [("interval_seconds", .number(3600))], overrides: overrides + extra)
    }

    /// Starts `settle run` and returns it with the notifications URL once it listens.
    func startDaemon(file: StaticString = #filePath, line: UInt = #line) throws -> (SettleBinary.Running, String) {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], outputFolder: world.folder)
        daemons.append(daemon)
        var port: String?
        _ = eventually(within: 20) {
            port = log(daemon).split(separator: "\n").first { $0.contains("notifications.listening") }?
                .split(separator: " ").first { $0.hasPrefix("port=") }.map { String($0.dropFirst(5)) }
            return port != nil && log(daemon).contains("pass.finished")
        }
        guard let port else {
            XCTFail("settle run never listened: \(log(daemon))", file: file, line: line)
            throw CocoaError(.fileReadUnknown)
        }
        return (daemon, "http://127.0.0.1:\(port)/apple/notifications/v2")
    }

    func log(_ daemon: SettleBinary.Running) -> String {
        (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? ""
    }

    func stateInLedger(_ orderId: String) -> String? {
        if let postgres {
            return (try? PostgresLedger(url: postgres.url, access: .readOnly, connections: 1).orderRecord(orderId))??.order.state.rawValue
        }
        return (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord(orderId))??.order.state.rawValue
    }

    /// A purchase Apple knows (Get Transaction Info finds it) and a notification about it.
    func applePurchase(_ id: String, type: String = "ONE_TIME_CHARGE", token: String?, product: String? = nil,
                       environment: String = "Production") -> SimulatedNotification {
        let transaction = world.scriptTransaction(id, product: product, environment: environment, purchaseDateMs: nowMs - 5000,
                                                  appAccountToken: token)
        // Signed a few seconds ago: sent before settle looks (history windows end at "now", exclusive).
        return SimulatedNotification(type: type, transaction: transaction, bundleId: world.bundleId, signedDateMs: nowMs - 5000)
    }

    /// Settle read Apple's history before: its first start was `secondsAgo` back, so this start
    /// catches up from there (a first start reads nothing from before itself).
    func historyStarted(secondsAgo: Int64 = 60) throws {
        let ledger = try ledger()
        let start = nowMs - secondsAgo * 1000
        for environment: AppleEnvironment in [.production, .sandbox] {
            try ledger.saveNotificationCursor(NotificationCursor(syncedUntilMs: start, startedAtMs: start), environment: environment)
        }
    }

    /// POSTs raw bytes on a fresh connection and returns the status line's code (nil: closed without answer).
    func rawExchange(_ url: String, _ request: String, pauseAfter bytes: Int? = nil, pause: Double = 0) -> Int? {
        Self.rawExchange(url, request, pauseAfter: bytes, pause: pause)
    }

    static func rawExchange(_ url: String, _ request: String, pauseAfter bytes: Int? = nil, pause: Double = 0) -> Int? {
        guard let port = URL(string: url)?.port else { return nil }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let data = Array(request.utf8)
        let first = bytes.map { min($0, data.count) } ?? data.count
        _ = data[0..<first].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if first < data.count {
            Thread.sleep(forTimeInterval: pause)
            _ = data[first...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        return text.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    func post(_ url: String, body: String) -> Int? {
        rawExchange(url, "POST /apple/notifications/v2 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
    }
}
