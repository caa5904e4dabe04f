import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleDelivery
import SettleLedger
import SettleEngine

/// `settle check-config`: validates everything a pass would need and prints what it
/// understood, secrets redacted.
enum CheckConfigCommand {
    static let spec = ArgumentSpec(command: "check-config", options: [])

    static let help = """
    Usage: settle check-config [--config PATH]

    Loads and validates the configuration, its secret files (which must exist and be readable
    by their owner only), the delivery command and the ledger's folder; prints what it
    understood with secrets redacted. Exit 0 when all is well, 78 otherwise.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let c = try context.loadConfiguration(parsed)
        do {
            for module in StoreModules.all { try module.readSecrets(c) }
            if case let .webhook(_, secret) = c.delivery.method { _ = try secret.read() }
            for module in StoreModules.all { try module.validate(c) }
        } catch {
            throw CommandFailure.from(error)
        }
        // What settle web would refuse is no OK here.
        if let address = ListenAddress(c.web.listen),
           let refusal = WebConsole.refusal(listen: c.web.listen, address: address,
                                            hasUsers: c.web.usersFile != nil || c.web.auth == .proxy, web: c.web) {
            throw CommandFailure(.config, refusal)
        }
        var receiptRoots = ""
        if let serverAPI = c.serverAPI {
            // Needed only when settle reads receipts itself, i.e. without receipt_api.
            do {
                let roots = try serverAPI.loadReceiptRoots()
                receiptRoots = "receipt roots loaded: " + roots.map(\.subjectSummary).joined(separator: "; ")
            } catch {
                guard c.receiptAPI != nil else { throw CommandFailure.from(error) }
                receiptRoots = "receipt roots not loaded (not needed: receipt_api verifies receipts): \(error)"
            }
        }
        // access(X_OK) alone passes a directory, and /dev/null passes as a ledger path: both
        // must be regular files (stat follows symlinks, so a link to a file is fine).
        if case let .command(argv) = c.delivery.method, !isRegularFile(argv[0]) || access(argv[0], X_OK) != 0 {
            throw CommandFailure(.config, "delivery.command[0]: \(argv[0]) is not an executable file")
        }
        var ledgerNote: String? = nil
        if let postgres = c.postgresLedger {
            // The password file is read now, so a mode or path mistake shows here, not at start.
            do { _ = try postgres.passwordFile?.read() } catch { throw CommandFailure.from(error) }
        } else {
            if FileManager.default.fileExists(atPath: c.ledgerPath), !isRegularFile(c.ledgerPath) {
                throw CommandFailure(.config, "ledger: \(c.ledgerPath) is not a regular file")
            }
            let folder = (c.ledgerPath as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) && folder.hasPrefix("/var/lib/settle") {
                // The units' StateDirectory=: systemd creates it, owned by settle, at first start.
                ledgerNote = "ledger folder \(folder) does not exist yet: systemd creates it at the first start (StateDirectory=)"
            } else if !isDirectory.boolValue {
                throw CommandFailure(.config, "ledger: folder \(folder) does not exist")
            }
        }
        context.print(describe(c, modules: context.modules))
        if let ledgerNote { context.print(ledgerNote) }
        if !receiptRoots.isEmpty { context.print(receiptRoots) }
        context.print("configuration OK")
    }

    /// A URL without what may be a credential: user info (`user:password@`), the query (`?token=`)
    /// and the fragment are replaced by `<redacted>`, as `HTTPErrorRedaction` does for errors.
    static func displayURL(_ url: String) -> String { ConfigurationText.url(url) }

    static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    static func describe(_ c: Configuration, modules: [any StoreModule.Type]) -> String {
        var lines = ["configuration: \(c.sourcePath)", "ledger: \(c.ledgerLocation)", "bundle_id: \(c.bundleId)",
                     "accept_sandbox: \(c.acceptSandbox)"]
        // Each store's own settings, in the order the stores are registered.
        for module in modules { lines += module.describe(c) }
        let b = c.userBinding
        lines.append("user_binding: app_account_token from \(b.tokenSource.rawValue)"
                     + (b.namespace.map { " (namespace \($0.uuidString.lowercased()))" } ?? "")
                     + ", unsigned_proofs \(b.unsignedProofs.rawValue), tokenless_signed_proofs \(b.tokenlessSignedProofs.rawValue)")
        for (id, product) in c.products.sorted(by: { $0.key < $1.key }) {
            lines.append("product \(id): \(product.kind.rawValue)" + (product.grant.map { " grant \($0.serialized())" } ?? "")
                         + storeText(product.stores))
        }
        switch c.delivery.method {
        case let .command(argv): lines.append("delivery.command: \(argv.joined(separator: " "))")
        case let .webhook(url, secret): lines.append("delivery.webhook: \(displayURL(url)), secret \(secret.path) (contents redacted)")
        }
        if !c.delivery.environment.isEmpty {
            lines.append("delivery.environment: \(c.delivery.environment.joined(separator: ", ")) (besides PATH, LANG, TZ, SETTLE_*)")
        }
        let n = CommandHook.format
        lines.append("delivery.timeout_seconds: \(n(c.delivery.timeoutSeconds))")
        let s = c.schedule
        lines.append("schedule: every \(n(s.intervalSeconds)) s, concurrency \(s.concurrency), max_attempts \(s.maxAttempts), backoff \(n(s.backoffBaseSeconds))...\(n(s.backoffMaxSeconds)) s")
        lines.append("http: connect timeout \(n(c.http.connectTimeoutSeconds)) s, total timeout \(n(c.http.timeoutSeconds)) s")
        if let metrics = c.metricsFile { lines.append("metrics_file: \(metrics)") }
        if let revoke = c.delivery.revokeCommand { lines.append("delivery.revoke_command: \(revoke.joined(separator: " "))") }
        if let revoke = c.delivery.revokeURL {
            // Without any user information a URL may carry: check-config output is shared in tickets.
            var shown = URLComponents(string: revoke)
            shown?.user = nil
            shown?.password = nil
            lines.append("delivery.webhook.revoke_url: \(shown?.string ?? "(set)")")
        }
        if let notes = c.notifications {
            lines.append("notifications: POST \(notes.path) on \(notes.listen), body <= \(notes.limits.maxBodyBytes) bytes, timeout \(notes.limits.timeoutSeconds) s, "
                         + "\(notes.limits.maxConnections) connections, history every \(n(notes.historyIntervalSeconds)) s"
                         + (notes.backfillSinceMs.map { ", first catch-up from \(Timestamp.rfc3339(milliseconds: $0))" } ?? ""))
            if c.delivery.revokeCommand == nil && c.delivery.revokeURL == nil {
                lines.append("revokes: no revoke route configured; after a refund the revoke waits (settle status ORDER shows it) until one is")
            }
        }
        if c.consumption.respond {
            lines.append("consumption: answer refund requests, refund_preference \(c.consumption.refundPreference?.rawValue ?? "none")")
        }
        lines.append("web: settle web on \(c.web.listen), "
                     + (c.web.auth == .proxy
                        ? "users from \(c.web.proxyUserHeader ?? "?") set by trusted proxies "
                            + "(default role \(c.web.defaultRole.rawValue), \(c.web.roles.count) named)"
                        : c.web.usersFile.map { "users \($0.path) (contents redacted)" }
                            ?? "no users file (loopback only)")
                     + (c.web.tlsInFront ? ", TLS terminated in front" : "")
                     + ", actions " + (c.web.actions ? "on" : "off (read-only)"))
        lines.append("shutdown_grace_seconds: \(n(c.shutdownGraceSeconds))")
        lines.append(c.refunds.text)
        return lines.joined(separator: "\n")
    }

    /// A product's stores, when they are not the default ones: its one store's name, or for
    /// several the alias they share (`both`), else their names.
    private static func storeText(_ stores: Set<Store>) -> String {
        guard stores != StoreRegistry.defaultProductStores else { return "" }
        let names = stores.map(\.rawValue).sorted()
        guard names.count > 1 else { return " store " + (names.first ?? "") }
        let descriptors = StoreRegistry.descriptors.filter { stores.contains($0.store) }
        let shared = descriptors.first?.productStoreAliases.first { alias in descriptors.allSatisfy { $0.productStoreAliases.contains(alias) } }
        return " store " + (shared ?? names.joined(separator: "+"))
    }
}
