import Foundation
import SettleApp
import SettleTesting
import Synchronization
import XCTest
import SettleBase
#if canImport(Glibc)
import Glibc
import SettleLedger
#endif

/// `settle run` as systemd runs it: the real process, a test-owned notify socket, signals.
final class DaemonTests: EndToEndTestCase {
    var notify: NotifySocket!
    var daemons: [SettleBinary.Running] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        notify = try NotifySocket(path: world.folder + "/notify.sock")
        // Passes come from SIGUSR1 and the start-up pass, not from the clock.
        try world.writeConfig(schedule: [("interval_seconds", .number(3600))])
    }

    override func tearDownWithError() throws {
        for daemon in daemons where daemon.isRunning {
            daemon.send(SIGKILL)
            _ = daemon.wait()
        }
        notify = nil
        try super.tearDownWithError()
    }

    func startDaemon(watchdogUsec: Int? = nil) throws -> SettleBinary.Running {
        var environment = ["NOTIFY_SOCKET": notify.path]
        if let watchdogUsec { environment["WATCHDOG_USEC"] = String(watchdogUsec) }
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], environment: environment,
                                            outputFolder: world.folder)
        daemons.append(daemon)
        return daemon
    }

    func waitForReady(_ daemon: SettleBinary.Running, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(eventually(within: 20) { notify.messages.contains { $0.contains("READY=1") } },
                      "no READY=1; stderr: \(log(daemon))", file: file, line: line)
    }

    func log(_ daemon: SettleBinary.Running) -> String {
        (try? String(contentsOfFile: daemon.stderrPath, encoding: .utf8)) ?? ""
    }

    func passes(_ daemon: SettleBinary.Running) -> Int {
        log(daemon).components(separatedBy: "pass.finished").count - 1
    }

    func stateInLedger(_ orderId: String) -> String? {
        (try? SQLiteLedger(readOnlyPath: world.ledgerPath).orderRecord(orderId))??.order.state.rawValue
    }

    /// Starts the daemon with a hook that runs `extra`, enqueues order o-1 (transaction
    /// `transaction`) and returns once the hook has created the file `marker`.
    func startDaemonWithHookInFlight(_ extra: String, marker: String, transaction: String = "100",
                                     overrides: [(String, JSONValue)] = []) throws -> SettleBinary.Running {
        let hook = try world.hook("in-flight.sh", exit: 0, extra: extra)
        try world.writeConfig(hook: hook, hookTimeout: 60, schedule: [("interval_seconds", .number(3600))], overrides: overrides)
        let daemon = try startDaemon()
        waitForReady(daemon)
        try enqueueValid("o-1", transaction: transaction)
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { FileManager.default.fileExists(atPath: world.folder + "/" + marker) }, log(daemon))
        return daemon
    }

    /// Kills a hook left running by a killed settle: it leads its own process group, whose id
    /// the hook wrote into `pidFile`.
    func killOrphanedHook(pidFile: String) {
        guard let text = try? String(contentsOfFile: world.folder + "/" + pidFile, encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
        kill(-pid, SIGKILL)
    }

    // MARK: -

    func testRun_tellsSystemdReadyStatusAndWatchdog_andFinishesOrdersEnqueuedWhileRunning() throws {
        let daemon = try startDaemon(watchdogUsec: 400_000)
        waitForReady(daemon)
        XCTAssertTrue(eventually(within: 10) { notify.messages.contains { $0.hasPrefix("STATUS=last pass:") } }, log(daemon))
        XCTAssertTrue(eventually(within: 5) { notify.messages.filter { $0 == "WATCHDOG=1" }.count >= 2 }, "\(notify.messages)")

        try enqueueValid("o-1", transaction: "100")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" }, log(daemon))
        XCTAssertEqual(world.deliveries, ["100 o-1"])
        XCTAssertTrue(eventually(within: 5) { notify.messages.contains { $0.contains("1 finished") } }, "\(notify.messages)")

        let status = try statusJSON()
        XCTAssertEqual(status["daemon"]?["pid"]?.looseString, String(daemon.pid))
        XCTAssertEqual(status["apple"]?["breaker"], .string("closed"))
        XCTAssertTrue(status["daemon"]?["last_pass_summary"]?.looseString?.hasPrefix("reconciled") == true)

        daemon.send(SIGTERM)
        XCTAssertEqual(daemon.wait().status, 0)
        XCTAssertTrue(notify.messages.contains { $0.hasPrefix("STOPPING=1") })
        XCTAssertEqual(try statusJSON()["daemon"], .null, "a stopped daemon is not shown as running")
    }

    func testPassesNeverOverlap_requestsDuringAPassCoalesceIntoOneFollowUp() throws {
        let hook = try world.hook("slow.sh", exit: 0, extra: "touch \(world.folder)/started; sleep 1")
        try world.writeConfig(hook: hook, schedule: [("interval_seconds", .number(3600))])
        try enqueueValid("o-1", transaction: "100")
        let daemon = try startDaemon()
        waitForReady(daemon)
        XCTAssertTrue(eventually(within: 10) { FileManager.default.fileExists(atPath: world.folder + "/started") }, log(daemon))
        for _ in 1...5 { daemon.send(SIGUSR1) }
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 2 }, log(daemon))
        usleep(500_000)
        XCTAssertEqual(passes(daemon), 2, "five requests during the first pass became one follow-up pass")
        XCTAssertEqual(world.deliveries.count, 1)
    }

    func testSecondDaemonOnTheSameLedger_exits75NamingTheHolder() throws {
        let first = try startDaemon()
        waitForReady(first)
        let second = try settle(["run"])
        XCTAssertEqual(second.status, 75)
        XCTAssertTrue(second.stderr.contains("pid \(first.pid)"), second.stderr)
        XCTAssertTrue(first.isRunning)
        // An operator's one-shot pass beside the daemon still works.
        try enqueueValid("o-op", transaction: "55")
        try settle(expecting: 0, ["reconcile", "--order", "o-op"])
        XCTAssertEqual(stateInLedger("o-op"), "finished")
    }

    func testSecondDaemon_evenWithEveryFileBesideTheLedgerDeleted_exits75NamingTheHolder() throws {
        let first = try startDaemon()
        waitForReady(first)
        XCTAssertTrue(eventually(within: 10) { passes(first) >= 1 }, log(first))
        // The lock is the ledger file itself: nothing beside it can be deleted to fool a second daemon.
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath + ".lock"))
        try? FileManager.default.removeItem(atPath: world.ledgerPath + ".lock")
        let second = try settle(["run"])
        XCTAssertEqual(second.status, 75, second.stderr)
        XCTAssertTrue(second.stderr.contains("pid \(first.pid)"), second.stderr)
        XCTAssertTrue(first.isRunning)
    }

    func testLedgerMovedAwayWhileRunning_theNextPassStopsTheDaemonWith74AndSaysWhy() throws {
        let daemon = try startDaemon()
        waitForReady(daemon)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 1 }, log(daemon))
        try FileManager.default.moveItem(atPath: world.ledgerPath, toPath: world.folder + "/ledger-moved.sqlite3")
        daemon.send(SIGUSR1)
        let result = daemon.wait()
        XCTAssertEqual(result.status, 74, result.stderr)
        XCTAssertTrue(result.stderr.contains("was moved, deleted or replaced"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: world.ledgerPath), "the daemon must not create a new ledger")
    }

    /// Field 3 (state) and 4 (parent pid) of /proc/PID/stat, nil once the process is gone.
    func stateAndParent(_ pid: Int32) -> (state: String, parent: Int32)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, let parent = Int32(fields[1]) else { return nil }
        return (String(fields[0]), parent)
    }

    func testAHooksOrphan_isAdoptedBySettle_andReapedAfterTheNextPass() throws {
        let fifo = world.folder + "/release"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let pidFile = world.folder + "/orphan.pid"
        let hook = try world.hook("orphaning.sh", exit: 0, extra: """
            sh -c 'read line < \(fifo)' < /dev/null > /dev/null 2>&1 &
            echo $! > \(pidFile).tmp && mv \(pidFile).tmp \(pidFile)
            """)
        try world.writeConfig(hook: hook, schedule: [("interval_seconds", .number(3600))])
        let daemon = try startDaemon()
        waitForReady(daemon)
        try enqueueValid("o-1", transaction: "100")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" }, log(daemon))
        let orphan = try XCTUnwrap(Int32(try String(contentsOfFile: pidFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        // The hook has exited; its background child, waiting on the fifo, is settle's now.
        XCTAssertTrue(eventually(within: 10) { stateAndParent(orphan)?.parent == daemon.pid },
                      "the orphan was not adopted by settle: \(String(describing: stateAndParent(orphan)))")
        // Released, it exits and is a zombie child of settle until a pass ends (the pass that
        // delivered o-1 may still be ending: on a loaded machine its own end may reap it).
        let writer = open(fifo, O_WRONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(writer, 0)
        _ = write(writer, "go\n", 3)
        close(writer)
        XCTAssertTrue(eventually(within: 10) { stateAndParent(orphan).map { $0.state == "Z" && $0.parent == daemon.pid } ?? true },
                      "the orphan is not a zombie child of settle: \(String(describing: stateAndParent(orphan)))")
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateAndParent(orphan) == nil },
                      "the zombie was not reaped by the next pass: \(String(describing: stateAndParent(orphan)))")
        XCTAssertTrue(daemon.isRunning)
    }

    func testSIGTERM_withASlowHookInFlight_finishesThatDeliveryAndExitsZero() throws {
        let daemon = try startDaemonWithHookInFlight("touch \(world.folder)/started; sleep 1.5; touch \(world.folder)/done",
                                                     marker: "started")
        daemon.send(SIGTERM)
        let result = daemon.wait()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: world.folder + "/done"), "the hook ran to its end")
        XCTAssertEqual(stateInLedger("o-1"), "finished")
        XCTAssertTrue(notify.messages.contains { $0.hasPrefix("STOPPING=1") })
        XCTAssertTrue(result.stderr.contains("daemon.stopped clean=true"), result.stderr)
    }

    func testSIGTERM_pastTheGrace_exitsAnyway_andLeavesTheOrderToRescue() throws {
        let daemon = try startDaemonWithHookInFlight("echo $$ > \(world.folder)/stuck; sleep 30", marker: "stuck",
                                                     overrides: [("shutdown_grace_seconds", .number(0.5))])
        let asked = Date()
        daemon.send(SIGTERM)
        let result = daemon.wait()
        XCTAssertEqual(result.status, 0)
        XCTAssertLessThan(Date().timeIntervalSince(asked), 10, "did not wait for the stuck hook")
        XCTAssertTrue(result.stderr.contains("daemon.grace_exceeded"), result.stderr)
        killOrphanedHook(pidFile: "stuck")
        XCTAssertEqual(stateInLedger("o-1"), "delivering", "left for rescue, not lost")
    }

    func testSIGKILLMidDelivery_thenRestart_finishesTheOrderWithTheSameKey() throws {
        let first = try startDaemonWithHookInFlight(
            "if [ ! -e \(world.folder)/first ]; then echo $$ > \(world.folder)/first; sleep 30; fi", marker: "first", transaction: "4242")
        first.send(SIGKILL)
        _ = first.wait()
        killOrphanedHook(pidFile: "first")
        XCTAssertEqual(stateInLedger("o-1"), "delivering")

        let second = try startDaemon()
        XCTAssertTrue(eventually(within: 15) { stateInLedger("o-1") == "finished" }, log(second))
        XCTAssertEqual(world.deliveries, ["4242 o-1", "4242 o-1"], "delivered again, with the same idempotency key")
        XCTAssertTrue(try history("o-1").contains { $0["kind"] == .string("rescue") })
        XCTAssertEqual(try attempts("o-1"), 0, "a rescue uses no attempt")
    }

    func testSIGHUP_reloadsAValidConfiguration_andKeepsTheOldOneWhenTheNewIsInvalid() throws {
        let daemon = try startDaemon()
        waitForReady(daemon)
        let readyBefore = notify.messages.filter { $0.hasPrefix("READY=1") }.count

        try world.writeConfig(schedule: [("interval_seconds", .number(1800)), ("concurrency", .number(2))])
        daemon.send(SIGHUP)
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("daemon.reloaded") }, log(daemon))
        let reloading = try XCTUnwrap(notify.messages.first { $0.hasPrefix("RELOADING=1") })
        XCTAssertNotNil(reloading.range(of: #"MONOTONIC_USEC=\d+"#, options: .regularExpression), reloading)
        XCTAssertTrue(eventually(within: 5) { notify.messages.filter { $0.hasPrefix("READY=1") }.count > readyBefore })

        try world.write("settle.json", #"{"ledger": "x.sqlite3", "bogus": true}"#)
        daemon.send(SIGHUP)
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("daemon.reload_failed") }, log(daemon))
        XCTAssertTrue(log(daemon).contains("error daemon.reload_failed"), "logged at error level")
        XCTAssertTrue(eventually(within: 5) {
            notify.messages.contains { $0.hasPrefix("STATUS=reload failed, running with the previous configuration: ") }
        }, "systemctl status shows the failed reload: \(notify.messages)")
        XCTAssertTrue(daemon.isRunning)
        // The ledger keeps it for settle status --check and the console's banner (issue 36) ...
        let ledger = try SQLiteLedger(path: world.ledgerPath, time: world.time)
        defer { try? ledger.close() }
        XCTAssertTrue(eventually(within: 5) { (try? ledger.daemonRecord()?.reloadError)??.contains("settle.json: ") == true },
                      "\(String(describing: try? ledger.daemonRecord()))")
        // ... until a reload works.
        try world.writeConfig(schedule: [("interval_seconds", .number(1800))])
        daemon.send(SIGHUP)
        XCTAssertTrue(eventually(within: 10) { (try? ledger.daemonRecord())??.reloadError == nil }, log(daemon))
        // Still serving with the previous configuration.
        try world.writeConfig(schedule: [("interval_seconds", .number(3600))])
        try enqueueValid("o-1", transaction: "100")
        try world.write("settle.json", #"{"ledger": "x.sqlite3", "bogus": true}"#)
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" }, log(daemon))
    }

    func testAppleOutage_opensTheBreaker_visibleInStatus_andUsesNoAttempts() throws {
        try world.writeConfig(schedule: [("interval_seconds", .number(3600)), ("concurrency", .number(1))])
        for i in 1...6 { try enqueueValid("o-\(i)", transaction: "\(i)", answers: Array(repeating: .http(503), count: 10)) }
        let daemon = try startDaemon()
        waitForReady(daemon)
        XCTAssertTrue(eventually(within: 15) { log(daemon).contains("apple.breaker_opened") }, log(daemon))
        let status = try statusJSON()
        XCTAssertEqual(status["apple"]?["breaker"], .string("open"))
        assertTime(status["apple"]?["retry_at"], nullable: false, "apple.retry_at")
        XCTAssertTrue(status["apple"]?["last_error"]?.looseString?.contains("503") == true, "\(String(describing: status["apple"]))")
        for i in 1...6 {
            XCTAssertEqual(try attempts("o-\(i)"), 0)
            XCTAssertEqual(try state("o-\(i)"), "pending")
        }
        XCTAssertEqual(world.simulator.requests.count, 5, "claiming stopped when the breaker opened")
        // While open, a pass claims nothing.
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { passes(daemon) >= 2 }, log(daemon))
        XCTAssertEqual(world.simulator.requests.count, 5)
        XCTAssertTrue(notify.messages.contains { $0.contains("App Store breaker open until") }, "\(notify.messages)")
    }

    func testWrongSharedSecret_keepsTheDaemonRunning_andStatusSaysSo() throws {
        try world.write("shared-secret", "not-the-secret", mode: 0o600)
        try enqueueValid("o-1", transaction: "100")
        let daemon = try startDaemon()
        waitForReady(daemon)
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("error apple.configuration_fault") }, log(daemon))
        XCTAssertTrue(daemon.isRunning, "a daemon keeps retrying slowly rather than exiting")
        let apple = try XCTUnwrap(try statusJSON()["apple"])
        XCTAssertTrue(apple["last_error"]?.looseString?.contains("configuration fault") == true, "\(apple)")
        XCTAssertTrue(apple["last_error"]?.looseString?.contains("21004") == true, "\(apple)")
        XCTAssertEqual(try attempts("o-1"), 0)
        XCTAssertTrue(notify.messages.contains { $0.contains("configuration fault") }, "\(notify.messages)")
        // Fixed secret + reload: the next pass settles the order and status clears the fault.
        try world.write("shared-secret", world.sharedSecret, mode: 0o600)
        daemon.send(SIGHUP)
        XCTAssertTrue(eventually(within: 10) { log(daemon).contains("daemon.reloaded") }, log(daemon))
        daemon.send(SIGUSR1)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" }, log(daemon))
        XCTAssertEqual(try statusJSON()["apple"]?["last_error"], .null)
    }

    func testMetricsFile_isWrittenAfterEachPass_asValidPrometheusText() throws {
        let metricsPath = world.folder + "/settle.prom"
        try world.writeConfig(schedule: [("interval_seconds", .number(3600))], overrides: [("metrics_file", .string(metricsPath))])
        try enqueueValid("o-1", transaction: "100")
        let daemon = try startDaemon()
        waitForReady(daemon)
        XCTAssertTrue(eventually(within: 10) { stateInLedger("o-1") == "finished" && FileManager.default.fileExists(atPath: metricsPath) })
        let text = try String(contentsOfFile: metricsPath, encoding: .utf8)
        let sample = try NSRegularExpression(pattern: #"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? -?[0-9.e+Inf]+$"#)
        var families: Set<String> = []
        for line in lines(text) {
            if line.hasPrefix("# TYPE ") { families.insert(line.split(separator: " ")[2].description); continue }
            if line.hasPrefix("# HELP ") { continue }
            XCTAssertNotNil(sample.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)), "not a sample line: \(line)")
        }
        XCTAssertEqual(families, ["settle_orders", "settle_oldest_undelivered_seconds", "settle_apple_requests_total",
                                  "settle_apple_request_duration_seconds", "settle_deliveries_total", "settle_hook_duration_seconds", "settle_breaker_open",
                                  "settle_last_pass_timestamp_seconds", "settle_notifications_total",
                                  "settle_newest_notification_age_seconds", "settle_store_orders", "settle_play_ack_deadline_soon",
                                  "settle_support_actions_waiting", "settle_refunds_last_hour", "settle_store_requests_total",
                                  "settle_store_finish_total",
                                  "settle_pacer_rate", "settle_pacer_ceiling_rate", "settle_pacer_learned_rate",
                                  "settle_pacer_requests_total",
                                  "settle_pacer_throttled_total", "settle_pacer_floor_throttled_total", "settle_pacer_waits_total",
                                  "settle_recovered_amount", "settle_recovered_orders", "settle_clawed_back_amount",
                                  "settle_clawed_back_orders",
                                  "settle_google_play_push_unknown_key_total", "settle_build_info"])
        for state in ["pending", "verifying", "delivering", "finished", "rejected", "needs_attention"] {
            XCTAssertTrue(text.contains("settle_orders{bundle_id=\"com.example.game\",state=\"\(state)\"}"), state)
        }
        XCTAssertTrue(text.contains("settle_support_actions_waiting{bundle_id=\"com.example.game\"} 0"), text)
        let app = "bundle_id=\"com.example.game\""
        XCTAssertTrue(text.contains("settle_orders{\(app),state=\"finished\"} 1"))
        XCTAssertTrue(text.contains("settle_deliveries_total{\(app),result=\"delivered\"} 1"))
        XCTAssertTrue(text.contains("settle_apple_requests_total{\(app),environment=\"Production\",outcome=\"status_0\"} 1"))
        XCTAssertTrue(text.contains("settle_apple_request_duration_seconds_count{\(app)} 1"))
        for line in lines(text) where !line.hasPrefix("#") {
            XCTAssertTrue(line.contains("{\(app)"), "every series names its app: \(line)")
        }
        XCTAssertFalse(text.contains("o-1"), "no per-order labels")
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: world.folder).contains { $0.hasSuffix(".tmp") })
        daemon.send(SIGTERM)
        XCTAssertEqual(daemon.wait().status, 0)
    }

    func testJournalStream_namingStderr_prefixesEachLineWithItsPriorityAndLeavesTheTimeToJournald() throws {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath], environment: ["NOTIFY_SOCKET": notify.path],
                                            outputFolder: world.folder, stderrIsJournal: true)
        daemons.append(daemon)
        waitForReady(daemon)
        daemon.send(SIGTERM)
        let result = daemon.wait()
        XCTAssertEqual(result.status, 0)
        let logLines = lines(result.stderr)
        XCTAssertFalse(logLines.isEmpty)
        for line in logLines { XCTAssertNotNil(line.range(of: #"^<[0-7]>[a-z]+\.[a-z_]+( |$)"#, options: .regularExpression), line) }
        XCTAssertTrue(logLines.contains { $0.hasPrefix("<6>daemon.started ") })
    }

    func testJournalStream_inheritedButNotNamingStderr_isIgnored() throws {
        let daemon = try SettleBinary.start(["run", "--config", world.configPath],
                                            environment: ["NOTIFY_SOCKET": notify.path, "JOURNAL_STREAM": "8:12345"],
                                            outputFolder: world.folder)
        daemons.append(daemon)
        waitForReady(daemon)
        daemon.send(SIGTERM)
        let result = daemon.wait()
        for line in lines(result.stderr) { XCTAssertNotNil(line.range(of: #"^\d{4}-\d\d-\d\dT[0-9:]+Z (debug|info|warning|error) "#, options: .regularExpression), line) }
    }
}

/// A datagram socket standing in for systemd's notify socket; collects every message.
final class NotifySocket: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let received = LineCollector()
    private let thread: Thread

    init(path: String) throws {
        self.path = path
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { close(fd); throw CocoaError(.fileWriteUnknown) }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        let received = self.received
        thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !Thread.current.isCancelled {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 {
                    let message = String(decoding: buffer[0..<count], as: UTF8.self)
                    received.append(message)
                }
            }
        }
        thread.start()
    }

    deinit {
        thread.cancel()
        usleep(150_000)
        close(fd)
        unlink(path)
    }

    /// Every datagram so far, each as sent (possibly several lines).
    var messages: [String] { received.lines }
}
