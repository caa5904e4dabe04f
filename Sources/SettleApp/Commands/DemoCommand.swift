import Foundation
import SettleBase
import SettleModel
import SettleLedger
import SettleEngine

/// `settle demo`: settle end to end on a fresh machine with no store account. Each registered
/// store tells its part of the story (`DemoChapter`), in registration order; this names none.
enum DemoCommand {
    static let spec = ArgumentSpec(command: "demo", options: [.init(name: "--keep", takesValue: false)])

    static var help: String {
        """
        Usage: settle demo [--keep]

        Creates a throwaway folder with a ledger, a configuration, each store's throwaway keys and
        a demo hook; starts each store's stand-in on 127.0.0.1 and enqueues orders of every kind;
        runs two reconcile passes an hour apart on a simulated clock; prints the resulting status
        and what each store was told. The folder is deleted at the end unless --keep is given.
        """ + "\n\n" + StoreDemoChapters.all.map { $0.synopsis }.joined(separator: "\n\n")
    }

    static let bundleId = "com.example.game"

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let folder = try makeFolder()
        var files = ["ledger.sqlite3", "settle.json"]
        // The folder holds keys and secrets: it goes on every way out. Errors and a closed stdout
        // (writes fail quietly) reach the defer below; SIGINT and SIGTERM would kill us before
        // it, so they remove it themselves.
        let removal = parsed.has("--keep") ? nil : FolderRemovalOnSignal(folder: folder)
        defer {
            removal?.cancel()
            if parsed.has("--keep") {
                context.print("\nkept \(folder) (\(files.joined(separator: ", ")))")
            } else {
                try? FileManager.default.removeItem(atPath: folder)
                context.print("\nremoved \(folder); nothing else was written")
            }
        }
        // An hour in the past: the second pass, an hour later, runs at the real now, so a kept
        // ledger reads true afterwards to settle status and settle web (scripts/web-screenshots.sh).
        let time = ManualTimeSource(Date().addingTimeInterval(-3600))
        let chapters = try startChapters(DemoSetting(folder: folder, time: time, bundleId: bundleId))
        defer { for chapter in chapters { chapter.stop() } }
        files += chapters.flatMap { $0.files } + ["grant-goods.sh", "granted.log", "revoke-goods.sh", "revoked.log"]
        let configPath = try writeFiles(folder: folder, chapters: chapters)
        let orders = try chapters.flatMap { try $0.orders(now: time.now) }
        var quiet = context
        quiet.time = time
        let configuration = try quiet.loadConfiguration(try ParsedArguments(["--config", configPath], spec: spec))
        let ledger = try SQLiteLedger(path: configuration.ledgerPath, time: time)
        for order in orders { _ = try ledger.enqueue(order) }
        let reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: context.environment,
                                                   log: Log(environment: [:], time: time, sink: { _ in }), modules: StoreModules.all)
        let stands = chapters.compactMap { $0.headline } + ["ledger in \(folder)"]
        context.print("settle demo: \(stands.joined(separator: ", "))")
        context.print("enqueued \(Plural.count(orders.count, "order")): "
                      + orders.map(\.orderId).joined(separator: ", ") + "\n")
        let first = try reconciler.runPass()
        context.print("pass 1: \(first.summaryLine)")
        time.advance(by: 3600)
        let second = try reconciler.runPass()
        context.print("pass 2 (an hour later): \(second.summaryLine)\n")
        context.print(StatusView.text(try ledger.summary(OrderFilter(limit: 50)), now: time.unixSeconds))
        let stage = DemoStage(
            folder: folder, time: time, ledger: ledger, reconciler: reconciler, print: { context.print($0) },
            orderText: { orderId, notifications in
                try orderText(orderId, withNotifications: notifications, ledger: ledger, time: time)
            })
        for chapter in chapters { try chapter.afterPasses(stage) }
        let granted = (try? String(contentsOfFile: folder + "/granted.log", encoding: .utf8)) ?? ""
        let calls = Plural.count(granted.split(separator: "\n").count, "time")
        context.print("the demo hook was called \(calls) (idempotency key, order):\n" + granted)
        for chapter in chapters { try chapter.laterActs(stage) }
    }

    /// Each registered store's chapter, its stand-in started; one that cannot start stops the others.
    static func startChapters(_ setting: DemoSetting) throws(CommandFailure) -> [any DemoChapter] {
        var chapters: [any DemoChapter] = []
        for chapter in StoreDemoChapters.all {
            do {
                chapters.append(try chapter.init(setting))
            } catch {
                for started in chapters { started.stop() }
                throw CommandFailure(error.kind == .unavailable ? .unavailable : .ioError, error.message)
            }
        }
        return chapters
    }

    /// An order as `settle status --order` shows it, with the notifications of it when asked.
    static func orderText(_ orderId: String, withNotifications: Bool, ledger: SQLiteLedger,
                          time: ManualTimeSource) throws -> String? {
        guard let record = try ledger.orderRecord(orderId) else { return nil }
        let (order, history, now) = (record.order, record.history, time.unixSeconds)
        guard withNotifications else { return StatusView.text(order, history: history, now: now) }
        return StatusView.text(order, history: history, notifications: try ledger.notifications(orderId: orderId), now: now)
    }

    static func makeFolder() throws(CommandFailure) -> String {
        var template = Array(((NSTemporaryDirectory() as NSString).appendingPathComponent("settle-demo-XXXXXX")).utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CommandFailure(.ioError, "cannot create a temporary folder: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// The hooks and the configuration: the core's sections with each chapter's sections and products.
    static func writeFiles(folder: String, chapters: [any DemoChapter]) throws(CommandFailure) -> String {
        let hook = """
        #!/bin/sh
        # The demo's delivery hook: a real backend would grant the goods idempotently by key.
        payload=$(cat)
        echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID" >> "\(folder)/granted.log"
        echo "granted $SETTLE_ORDER_ID: $payload"
        """
        let config = JSONValue.object([
            ("ledger", .string(folder + "/ledger.sqlite3")),
            ("bundle_id", .string(bundleId)),
            ("accept_sandbox", .bool(true)),
        ] + chapters.flatMap { $0.sections } + [
            ("products", .object(chapters.flatMap { $0.products })),
            ("delivery", .object([("command", .array([.string("/bin/sh"), .string(folder + "/grant-goods.sh")])),
                                  ("revoke_command", .array([.string("/bin/sh"), .string(folder + "/revoke-goods.sh")])),
                                  ("timeout_seconds", .number(10))])),
            ("schedule", .object([("concurrency", .number(4)), ("max_attempts", .number(5))])),
            ("http", .object([("connect_timeout_seconds", .number(2)), ("timeout_seconds", .number(5))])),
        ])
        let fm = FileManager.default
        let ok = fm.createFile(atPath: folder + "/grant-goods.sh", contents: Data(hook.utf8), attributes: [.posixPermissions: 0o700])
            && fm.createFile(atPath: folder + "/revoke-goods.sh", contents: Data(revokeHook(folder).utf8), attributes: [.posixPermissions: 0o700])
            && fm.createFile(atPath: folder + "/settle.json", contents: Data(config.serialized(pretty: true).utf8))
        guard ok else { throw CommandFailure(.ioError, "cannot write the demo's files in \(folder)") }
        return folder + "/settle.json"
    }

    /// The demo's revoke hook: it logs what it would take back, the share included.
    static func revokeHook(_ folder: String) -> String {
        """
        #!/bin/sh
        # The demo's revoke hook: a real backend takes the goods back, idempotently by key.
        payload=$(cat)
        # How much to take back: the store's revocation type and percentage (milliunits; null: all of it).
        kind=$(printf '%s' "$payload" | sed -n 's/.*"revocation_type":"\\([A-Z_]*\\)".*/\\1/p')
        share=$(printf '%s' "$payload" | sed -n 's/.*"revocation_percentage":\\([0-9a-z]*\\).*/\\1/p')
        echo "$SETTLE_IDEMPOTENCY_KEY $SETTLE_ORDER_ID $kind $share" >> "\(folder)/revoked.log"
        echo "revoked $SETTLE_ORDER_ID: $payload"
        """
    }
}

/// Removes the demo's folder and exits 128+signal when SIGINT or SIGTERM arrives.
final class FolderRemovalOnSignal {
    private var sources: [any DispatchSourceSignal] = []

    init(folder: String) {
        for signalNumber in [SIGINT, SIGTERM] {
            // Dispatch sees the signal only once its default action (death) is off.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                try? FileManager.default.removeItem(atPath: folder)
                _exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
        sources = []
    }
}
