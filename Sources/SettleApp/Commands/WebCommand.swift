import SettleBase
import SettleConfig
import SettleLedger

/// `settle web [--listen ADDR]`: the support console, a process of its own beside the daemon.
/// It opens the ledger read-only, as `settle status` does, unless `web.actions` is on.
enum WebCommand {
    static let spec = ArgumentSpec(command: "web", options: [.init(name: "--listen", takesValue: true)])

    static let help = """
    Usage: settle web [--listen HOST:PORT]

    Serves the support console: the overview of the ledger, search (order, user, transaction,
    \(StoreNames.owners()) order id; a purchase token through a form), each order's verdict and story,
    notifications, the audit log (/audit), and /api/... with the JSON of settle status --json.
    Runs until SIGTERM or SIGINT; configured by the web section (docs/web.md).

      --listen HOST:PORT  where to listen (default web.listen, else 127.0.0.1:8480). A listener
                          that is not loopback needs web.users_file or web.auth proxy (exit 78
                          without).

    Read-only unless web.actions is true: then retry, assign, resolve, transfer and redeliver
    are POST forms with a CSRF token, recorded in the order's history as "by NAME via web" and
    in the audit log (settle audit). With web.users_file every request needs HTTP basic auth
    (users made with settle web-passwd NAME; a third field name:hash:role gives a role viewer,
    support or admin, admin when absent); failed logins are limited to 5 per client address in
    5 minutes. With web.auth proxy the user is the one web.proxy_user_header names, believed
    only from web.trusted_proxies, with the role web.roles gives (else web.default_role,
    viewer). A POST the role may not make answers 403. TLS belongs to a reverse proxy in front.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let configuration = try context.loadConfiguration(parsed)
        let web = configuration.web
        let listen = parsed.value("--listen") ?? web.listen
        guard let address = ListenAddress(listen) else {
            if parsed.value("--listen") != nil {
                throw UsageError(command: "web", message: "--listen takes HOST:PORT with a numeric IPv4 or [IPv6] host, got '\(listen)'")
            }
            throw CommandFailure(.config, "web.listen: \"\(listen)\" is not HOST:PORT with a numeric IPv4 or [IPv6] host")
        }
        let identified = web.usersFile != nil || web.auth == .proxy
        if let refusal = WebConsole.refusal(listen: listen, address: address, hasUsers: identified, web: web) {
            throw CommandFailure(.config, refusal)
        }
        var users: WebUsers? = nil
        if let file = web.usersFile, web.auth == .basic {
            do { users = try WebUsers.load(file) } catch { throw CommandFailure.from(error) }
        }
        let log = context.log
        let console: WebConsole
        let ledger: any SettleLedger
        do {
            ledger = try configuration.openLedger(web.actions ? .current : .readOnly, time: context.time)
        } catch {
            throw CommandFailure.from(error)
        }
        do {
            console = try WebConsole(listen: listen, configuration: configuration, ledger: ledger, users: users, actions: web.actions,
                                     time: context.time, log: log)
        } catch {
            throw CommandFailure(.unavailable, "\(error)")
        }
        // Caught before the line that says it listens: whoever reads it may stop it at once.
        StopSignal.install()
        let shown = console.boundAddress.map(String.init(describing:)) ?? listen
        log.info("web.listening", ["address": shown, "actions": web.actions, "users": users?.names.count ?? 0])
        context.print("settle web listening on http://\(shown)/ (" + (web.actions ? "actions on" : "read-only")
                      + (web.auth == .proxy ? ", users from \(web.proxyUserHeader ?? "?") set by a trusted proxy"
                         : users.map { ", " + Plural.count($0.names.count, "user") } ?? ", no users file: loopback only") + ")")
        StopSignal.wait()
        console.stop()
        try? ledger.close()
        log.info("web.stopped")
    }
}
