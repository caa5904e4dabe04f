import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
import SettleEngine

/// `settle run`: reconciles on a Dispatch timer until SIGTERM.
///
/// Passes run on one serial queue, so they never overlap: a timer tick or SIGUSR1 arriving
/// during a pass waits for it and becomes one follow-up pass. Signals are handled on a
/// separate queue so SIGTERM is seen while a pass runs: the pass stops claiming, in-flight
/// work finishes within `shutdown_grace_seconds`, and whatever is left is for rescue.
package final class Daemon: @unchecked Sendable {
    private let configPath: String
    private let environment: [String: String]
    private let log: Log
    private let notifier: SystemdNotifier
    private let time: any TimeSource
    private let owner: LeaseOwner

    private let workQueue = DispatchQueue(label: "settle.daemon.work")
    private let controlQueue = DispatchQueue(label: "settle.daemon.control")
    private let done = DispatchSemaphore(value: 0)
    /// The lifecycle (DaemonState); every transition goes through it, under this one lock.
    private let state = Mutex<DaemonState<Running>>(.starting)
    private let metrics = Metrics()

    /// What exists only while the daemon runs (and while it finishes its last pass).
    /// Unchecked because the ledger and the lock are not Sendable: they are used only on the
    /// work queue (passes, reload, the clean finish); other queues read the configuration
    /// (Sendable) or nothing.
    struct Running: @unchecked Sendable {
        var configuration: Configuration
        let ledger: any SettleLedger
        var reconciler: Reconciler
        /// The file lock of a SQLite ledger; nil for PostgreSQL.
        let lock: DaemonLock?
    }

    // Touched only on workQueue.
    private var timer: DispatchSourceTimer?
    private var watchdogTimer: DispatchSourceTimer?
    private var passQueued = false
    private var configurationFaultDelay: Double = 0
    private var notBefore: Int64 = 0
    private var signalSources: [DispatchSourceSignal] = []
    private var watchdog: Watchdog?
    private var exitCode = ExitCode.success
    private var endpoint: NotificationEndpoint?
    /// The stores' own timers (Apple's history catch-up), by task event, and their intervals.
    private var taskTimers: [DispatchSourceTimer] = []
    private var taskSchedule: [String: Double] = [:]
    /// Each store's listener routes, which the endpoint's threads hand requests to; replaced on
    /// reload (the paths stay those the endpoint started with).
    private let routes = Mutex<[String: ListenerRoute]>([:])

    package init(configPath: String, environment: [String: String], log: Log, time: any TimeSource = SystemTimeSource(),
                owner: LeaseOwner = .current) {
        self.configPath = configPath
        self.environment = environment
        self.log = log
        self.notifier = SystemdNotifier(environment: environment)
        self.time = time
        self.owner = owner
    }

    /// Starts, serves until stopped, and returns the exit code.
    package func run() -> ExitCode {
        do {
            try start()
        } catch let failure as CommandFailure {
            log.error("daemon.start_failed", ["error": failure.message])
            return failure.code
        } catch {
            log.error("daemon.start_failed", ["error": "\(error)"])
            return .ioError
        }
        done.wait()
        return exitCode
    }

    private var isStopping: Bool { state.withLock { $0.isStopping } }

    /// What the daemon holds now. Only the work queue replaces the configuration and the
    /// reconciler (reload), so a copy taken there stays current for the rest of the block.
    /// Nil before the start and once stopped.
    private var current: Running? { state.withLock { $0.running } }

    // MARK: - Start

    private func start() throws {
        // Before any thread starts (the listener's, the workers'), so every thread inherits it:
        // the daemon's signals are held pending until their dispatch sources are registered.
        // An ignored signal that is not blocked is dropped at once, and registering a source
        // finishes on libdispatch's own thread a moment after `resume()`: a SIGTERM sent right
        // after READY=1 was lost, and the daemon never stopped. Hooks get an empty mask
        // (posix_spawnattr_setsigmask), so they see signals as usual.
        Self.blockDaemonSignals()
        let configuration: Configuration
        do {
            configuration = try Configuration.load(path: configPath, environment: environment)
        } catch {
            throw CommandFailure(.config, error.message)
        }
        // The file lock keeps one daemon per SQLite ledger; a PostgreSQL ledger is shared by
        // any number of them, coordinated in the database.
        var lock: DaemonLock? = nil
        // A start that fails anywhere below lets go of the lock (the ledger is left to the
        // process's exit, as before).
        var ready = false
        defer { if !ready { lock?.release() } }
        if configuration.postgresLedger == nil {
            do {
                lock = try DaemonLock(ledgerPath: configuration.ledgerPath)
            } catch {
                if case .held = error { throw CommandFailure(.tempFail, error.description) }
                throw CommandFailure(.ioError, error.description)
            }
        }
        let ledger: any SettleLedger
        do {
            ledger = try configuration.openLedger(.migrating, time: time)
        } catch {
            throw CommandFailure.from(error)
        }
        let reconciler: Reconciler
        do {
            reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: environment, log: log, metrics: metrics, modules: StoreModules.all)
        } catch {
            throw CommandFailure(.config, error.message)
        }
        do {
            try ledger.recordDaemonStarted(owner)
        } catch {
            throw CommandFailure.from(error)
        }
        let running = Running(configuration: configuration, ledger: ledger, reconciler: reconciler, lock: lock)
        // starting -> running.
        _ = state.withLock { $0.started(running) }
        routes.withLock { $0 = reconciler.listenerRoutes }
        metrics.observeNewestNotification(at: try? ledger.newestNotificationAt())
        if let notifications = configuration.notifications {
            try startEndpoint(notifications, paths: reconciler.listenerRoutes.keys.sorted())
        }
        installSignalHandlers()
        if !ChildReaper.becomeSubreaper() {
            log.warning("daemon.no_subreaper", ["effect": "orphans of hooks are left to PID 1"])
        }
        workQueue.sync {
            startWatchdog(configuration)
            scheduleTimer(interval: configuration.schedule.intervalSeconds)
            scheduleStoreTasks(reconciler.storeTasks)
        }
        log.info("daemon.started", ["pid": owner.pid, "ledger": configuration.ledgerLocation,
                                    "interval_seconds": configuration.schedule.intervalSeconds,
                                    "concurrency": configuration.schedule.concurrency])
        notifier.send("READY=1\nSTATUS=starting the first pass\nMAINPID=\(owner.pid)")
        workQueue.async { self.requestPass(force: true) }
        ready = true
    }

    private static let daemonSignals: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGUSR1]

    private static func blockDaemonSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signalNumber in daemonSignals { sigaddset(&set, signalNumber) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private func installSignalHandlers() {
        for (signalNumber, handler) in [(SIGTERM, stop), (SIGINT, stop), (SIGHUP, reload), (SIGUSR1, passNow)]
            as [(Int32, () -> Void)] {
            // The default action would kill us before Dispatch could deliver the signal.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: controlQueue)
            source.setEventHandler(handler: handler)
            source.resume()
            signalSources.append(source)
        }
    }

    /// Listens for the stores' notifications (App Store Server Notifications, Google's Pub/Sub
    /// pushes), each store at its own paths: on the socket systemd passed (settle.socket), else
    /// on `notifications.listen`.
    private func startEndpoint(_ notifications: Configuration.NotificationsConfiguration, paths: [String]) throws {
        var passed: Int32? = nil
        if environment["LISTEN_PID"].flatMap({ Int32($0) }) == owner.pid, environment["LISTEN_FDS"] == "1" {
            passed = 3 // SD_LISTEN_FDS_START (sd_listen_fds(3))
        }
        do {
            var served: [String: @Sendable (HTTPServerRequest) -> HTTPServerResponse] = [:]
            for path in paths {
                served[path] = { [workQueue, unowned self] request in
                    guard let route = self.routes.withLock({ $0[path] }) else { return HTTPServerResponse.listenerReply(503, "starting") }
                    let (response, needsPass) = route(request)
                    if needsPass { workQueue.async { self.requestPass(force: true) } }
                    return response
                }
            }
            endpoint = try NotificationEndpoint(address: notifications.listen, listenDescriptor: passed, path: notifications.path,
                                                limits: notifications.limits, log: log, routes: served) { _ in
                // notifications.path with no store behind it (no App Store section is configured).
                HTTPServerResponse.listenerReply(404, "no store is configured to take notifications at this path")
            }
        } catch {
            // Serving on another address than the configured one (every interface, another port)
            // would refuse the proxy's traffic or expose the endpoint: never start so.
            throw CommandFailure(error.isAddressMismatch ? .config : .unavailable, error.description)
        }
        log.info("notifications.listening", ["address": endpoint?.boundAddress?.description ?? "unknown",
                                             "configured": passed == nil ? notifications.listen : "systemd socket",
                                             "port": endpoint?.port, "paths": paths.joined(separator: ",")])
    }

    /// Each store's timers (Apple's Get Notification History), at start and every interval;
    /// scheduled again only when a reload changes which tasks there are or how often they run.
    private func scheduleStoreTasks(_ tasks: [StoreTask]) {
        let schedule = Dictionary(tasks.map { ($0.event, $0.intervalSeconds) }) { first, _ in first }
        guard schedule != taskSchedule else { return }
        taskTimers.forEach { $0.cancel() }
        taskSchedule = schedule
        taskTimers = schedule.keys.sorted().map { event in
            let source = DispatchSource.makeTimerSource(queue: workQueue)
            source.schedule(deadline: .now(), repeating: schedule[event]!, leeway: .seconds(1))
            source.setEventHandler { [unowned self] in runStoreTask(event) }
            source.resume()
            return source
        }
    }

    /// Runs the current reconciler's task of that name (a reload may have made it anew).
    private func runStoreTask(_ event: String) {
        guard !isStopping, let task = current?.reconciler.storeTasks.first(where: { $0.event == event }) else { return }
        do {
            // The task runs on the work queue, where the idle watchdog timer cannot fire: it
            // kicks the watchdog itself after each piece, as a pass does after each order.
            let dog = watchdog
            let report = try task.run { dog?.kick() }
            log.log(.info, task.event, pairs: report.fields)
            if report.needsPass { requestPass(force: true) }
        } catch {
            log.error(task.failedEvent, ["error": "\(error)"])
        }
    }

    private func scheduleTimer(interval: Double) {
        timer?.cancel()
        let source = DispatchSource.makeTimerSource(queue: workQueue)
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(100))
        source.setEventHandler { [unowned self] in requestPass(force: false) }
        source.resume()
        timer = source
    }

    /// WATCHDOG=1 at half of `$WATCHDOG_USEC`, from the work queue (idle) and from the pass's
    /// progress (busy), never from an independent thread: a hung pass stops the pings.
    private func startWatchdog(_ configuration: Configuration) {
        // Finite and at most a day: Dispatch turns the interval into nanoseconds, and `inf` or
        // 1e300 there trapped at start-up.
        guard let usecText = environment["WATCHDOG_USEC"], let read = Double(usecText), read > 0, read.isFinite else {
            return
        }
        let usec = min(read, 86_400e6)
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != owner.pid { return }
        let interval = usec / 2_000_000
        let dog = Watchdog(interval: interval, notifier: notifier)
        watchdog = dog
        let source = DispatchSource.makeTimerSource(queue: workQueue)
        source.schedule(deadline: .now(), repeating: interval / 2, leeway: .milliseconds(10))
        source.setEventHandler { dog.kick() }
        source.resume()
        watchdogTimer = source
        let worstOrder = configuration.delivery.timeoutSeconds
            + 2 * (configuration.http.timeoutSeconds + configuration.http.connectTimeoutSeconds)
        if usec / 1_000_000 < worstOrder {
            log.warning("daemon.watchdog_short", ["watchdog_seconds": usec / 1_000_000, "slowest_order_seconds": worstOrder])
        }
    }

    // MARK: - Passes (work queue)

    private func requestPass(force: Bool) {
        guard !isStopping, !passQueued else { return }
        if !force && time.unixSeconds < notBefore { return }
        passQueued = true
        workQueue.async { [self] in
            passQueued = false
            runPass()
        }
    }

    private func runPass() {
        guard !isStopping, let running = current else { return }
        let (configuration, ledger, reconciler) = (running.configuration, running.ledger, running.reconciler)
        guard running.lock?.isStillAtPath() != false else { return stopForReplacedLedger(configuration) }
        // Passes never overlap and every hook of this one has been waited for by then: what is
        // left to reap is orphans of hooks (ChildReaper).
        defer { ChildReaper.reapExited() }
        let started = DispatchTime.now()
        let report: PassReport
        do {
            let dog = watchdog
            report = try reconciler.runPass(shouldStop: { [unowned self] in isStopping },
                                            progress: { dog?.kick() })
        } catch {
            log.error("pass.failed", ["error": "\(error)"])
            notifier.send("STATUS=last pass failed: \(error)")
            return
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        handleConfigurationFault(report, schedule: configuration.schedule)
        var summary: LedgerSummary? = nil
        do {
            try ledger.recordDaemonPass(owner, summary: report.summaryLine)
            summary = try ledger.summary(OrderFilter(limit: 0))
        } catch {
            log.error("ledger.error", ["error": "\(error)"])
        }
        let breakers = (try? ledger.breakers()) ?? [:]
        // An idle pass is news to nobody: debug, so the journal shows what happened, not the clock.
        log.log(report.reconciled == 0 ? .debug : .info, "pass.finished", ["summary": report.summaryLine, "duration_ms": Int(seconds * 1000),
                                   "breakers_open": Store.allCases.filter { breakers[$0]?.state == .open }.map(\.rawValue).joined(separator: ",")])
        notifier.send("STATUS=" + statusLine(report, summary: summary, breakers: breakers))
        if let path = configuration.metricsFile, let summary {
            do {
                let now = ledger.time.unixSeconds
                metrics.observeRevenue(try? ledger.revenue(since: now - Metrics.revenueWindowSeconds, until: now + 1))
                try metrics.write(to: path, summary: summary, bundleId: configuration.bundleId)
            } catch {
                log.error("metrics.write_failed", ["path": path, "error": "\(error)"])
            }
        }
    }

    /// The ledger file was moved, deleted or replaced under us. Carrying on would record grants
    /// in a file nobody reads; silently reopening would serve whatever now lies at the path (a
    /// restored backup may show granted orders as pending, and would grant them twice). A
    /// person must look, so stop with 74 and say why; a restart opens what is there then.
    private func stopForReplacedLedger(_ configuration: Configuration) {
        let message = "the ledger file \(configuration.ledgerPath) was moved, deleted or replaced while settle ran; "
            + "stopping so that nothing is granted from the wrong ledger. Put the right ledger back and start settle again"
        log.error("ledger.replaced", ["error": message])
        notifier.send("STATUS=stopped: \(message)")
        exitCode = .ioError
        guard state.withLock({ $0.beginStopping() }) != nil else { return }
        notifier.send("STOPPING=1")
        finish(clean: true)
    }

    /// A fault of the delivery hook's setup holds every pass back, doubling; a store's
    /// configuration fault holds back that store only, through its breaker.
    private func handleConfigurationFault(_ report: PassReport, schedule: Configuration.Schedule) {
        guard let fault = report.deliveryConfigurationFault else {
            configurationFaultDelay = 0
            notBefore = 0
            return
        }
        configurationFaultDelay = min(schedule.backoffMaxSeconds,
                                      configurationFaultDelay == 0 ? schedule.backoffBaseSeconds : configurationFaultDelay * 2)
        notBefore = time.unixSeconds + Int64(configurationFaultDelay)
        log.error("daemon.configuration_fault", ["error": fault, "next_try_seconds": Int(configurationFaultDelay)])
    }

    private func statusLine(_ report: PassReport, summary: LedgerSummary?, breakers: [Store: StoreBreaker]) -> String {
        var parts = ["\(report.finished) finished", "\(report.retrying) retrying"]
        if let summary { parts.append("\(summary.counts[.pending] ?? 0) pending") }
        if summary?.counts[.needsAttention] ?? 0 > 0 { parts.append("\(summary?.counts[.needsAttention] ?? 0) need attention") }
        let open = Store.allCases.compactMap { store in
            breakers[store].flatMap { $0.state == .open ? $0.retryAt : nil }
                .map { "\(store.displayName) breaker open until \(Timestamp.rfc3339(unixSeconds: $0))" }
        }
        parts += open.isEmpty ? ["breakers closed"] : open
        if let fault = report.configurationFault { parts.append("configuration fault: \(fault)") }
        return "last pass: " + parts.joined(separator: ", ")
    }

    // MARK: - Signals (control queue)

    private func passNow() {
        log.info("daemon.pass_requested", ["signal": "SIGUSR1"])
        workQueue.async { self.requestPass(force: true) }
    }

    private func reload() {
        notifier.send("RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())")
        log.info("daemon.reloading", ["config": configPath])
        workQueue.async { [self] in
            defer { notifier.send("READY=1") }
            // Said in the journal and in `systemctl status`, which is where whoever reloaded looks.
            func failed(_ error: String) {
                log.error("daemon.reload_failed", ["error": error, "kept": "previous configuration"])
                let line = error.split(separator: "\n").first.map(String.init) ?? error
                notifier.send("STATUS=reload failed, running with the previous configuration: " + PrintableText.escape(line))
                // And in the ledger, so settle status --check and the console's banner say so.
                try? current?.ledger.recordDaemonReload(owner, error: String(line.prefix(500)))
            }
            // A reload only changes a running daemon; once a stop began it has nothing to change.
            guard let running = current, !isStopping else { return }
            let configuration = running.configuration
            let fresh: Configuration
            do {
                fresh = try Configuration.load(path: configPath, environment: environment)
            } catch {
                return failed("\(error)")
            }
            guard fresh.ledgerLocation == configuration.ledgerLocation else {
                return failed("the ledger path cannot change on reload; restart settle")
            }
            let reconciler: Reconciler
            do {
                reconciler = try Reconciler.configured(fresh, ledger: running.ledger, environment: environment, log: log, metrics: metrics, modules: StoreModules.all)
            } catch {
                return failed("\(error)")
            }
            if fresh.schedule.intervalSeconds != configuration.schedule.intervalSeconds {
                scheduleTimer(interval: fresh.schedule.intervalSeconds)
            }
            routes.withLock { $0 = reconciler.listenerRoutes }
            if fresh.notifications?.listen != configuration.notifications?.listen || fresh.notifications?.path != configuration.notifications?.path {
                log.warning("daemon.reload_partial", ["kept": "the notifications endpoint as it was; restart settle to move it"])
            }
            scheduleStoreTasks(reconciler.storeTasks)
            // running -> running: the new configuration and reconciler replace the old in place.
            _ = state.withLock { $0.reload { $0.configuration = fresh; $0.reconciler = reconciler } }
            configurationFaultDelay = 0
            notBefore = 0
            // A store held back for its configuration is probed at the next pass: the reload may be the fix.
            for (store, var breaker) in (try? running.ledger.breakers()) ?? [:] where breaker.isOpenForConfigurationFault {
                breaker.retryAt = time.unixSeconds
                try? running.ledger.saveBreaker(breaker, of: store)
            }
            try? running.ledger.recordDaemonReload(owner, error: nil)
            log.info("daemon.reloaded", ["interval_seconds": fresh.schedule.intervalSeconds,
                                         "concurrency": fresh.schedule.concurrency])
        }
    }

    private func stop() {
        // running -> stopping: only the first SIGTERM/SIGINT counts.
        guard let running = state.withLock({ $0.beginStopping() }) else { return }
        notifier.send("STOPPING=1\nSTATUS=stopping: finishing in-flight work")
        let grace = running.configuration.shutdownGraceSeconds
        log.info("daemon.stopping", ["grace_seconds": grace])
        // Runs after the current pass: the pass stops claiming and finishes what it holds.
        workQueue.async { self.finish(clean: true) }
        controlQueue.asyncAfter(deadline: .now() + grace) { [self] in
            guard state.withLock({ $0.running }) != nil else { return }
            log.warning("daemon.grace_exceeded", ["grace_seconds": grace, "left_to": "rescue by the next start"])
            finish(clean: false)
        }
    }

    private func finish(clean: Bool) {
        // stopping -> stopped: exactly once, whether the pass let go first or the grace ran out.
        guard let running = state.withLock({ $0.finish() }) else { return }
        timer?.cancel()
        watchdogTimer?.cancel()
        taskTimers.forEach { $0.cancel() }
        // Stop taking notifications before the ledger closes; answers in flight finish first.
        endpoint?.stop()
        if clean {
            try? running.ledger.recordDaemonStopped(owner)
            try? running.ledger.close()
        }
        // Closing our descriptor while the ledger is open would drop SQLite's locks (DaemonLock).
        if clean { running.lock?.release() }
        log.info("daemon.stopped", ["clean": clean])
        done.signal()
    }
}

/// Sends WATCHDOG=1 at most once per interval, whoever calls `kick`.
final class Watchdog: Sendable {
    private let interval: Double
    private let notifier: SystemdNotifier
    private let last = Mutex<UInt64>(0)

    init(interval: Double, notifier: SystemdNotifier) {
        self.interval = interval
        self.notifier = notifier
    }

    func kick() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = last.withLock { last -> Bool in
            guard last == 0 || Double(now - last) / 1e9 >= interval * 0.9 else { return false }
            last = now
            return true
        }
        if due { notifier.send("WATCHDOG=1") }
    }
}
