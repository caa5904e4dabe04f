import Foundation
import SettleBase
import SettleConfig
import SettleLedger
import SettleModel

/// `settle web`: the support console, on the project's one HTTP server. Every page is the HTML
/// form of what `settle status` prints (the same reads, the same words); it never writes unless
/// `web.actions` is on, and then only through the ledger calls the commands make.
package final class WebConsole: Sendable {
    /// Why the console could not start.
    package struct StartError: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    let ledger: any SettleLedger
    let configuration: Configuration
    let time: any TimeSource
    let log: Log
    /// Nil: no users file; only a loopback listener is allowed then, and every request is "local".
    let users: WebUsers?
    let actions: Bool
    let csrf: CSRFToken
    let throttle: LoginThrottle
    let allowedHosts: AllowedHosts
    /// Who a request is from (the forwarded client behind `web.trusted_proxies`).
    let clients: ClientAddress
    /// Requests being answered per client: behind a trusted proxy the TCP per-address limit
    /// would apply to everyone at once, so it is kept here, per forwarded client.
    let inFlight: PerClientLimit
    /// Store lookups from the search page: one client per store for the process, POST only, limited per operator.
    let lookups: ConsoleLookups
    /// Proxy users seen lately (`web.auth: proxy`): a sign-in is audited once a session.
    let proxySessions = ProxySessions()
    private let server: EmbeddedHTTPServer

    package var port: Int { server.port }
    package var boundAddress: ListenAddress? { server.boundAddress }

    /// Starts serving on `listen` (`HOST:PORT`, port 0 picks one).
    init(listen: String, configuration: Configuration, ledger: any SettleLedger, users: WebUsers?, actions: Bool,
         time: any TimeSource, log: Log) throws(StartError) {
        guard let address = ListenAddress(listen) else {
            throw StartError(description: "web.listen: \"\(listen)\" is not HOST:PORT with a numeric IPv4 or [IPv6] host")
        }
        let identified = users != nil || configuration.web.auth == .proxy
        if let refusal = Self.refusal(listen: listen, address: address, hasUsers: identified, web: configuration.web) {
            throw StartError(description: refusal)
        }
        self.ledger = ledger
        self.configuration = configuration
        self.time = time
        self.log = log
        self.users = users
        self.actions = actions
        csrf = CSRFToken(time: time)
        throttle = LoginThrottle(time: time)
        let core = Handler()
        clients = ClientAddress(trusted: configuration.web.trustedProxies)
        lookups = ConsoleLookups(configuration: configuration, time: time)
        inFlight = PerClientLimit(limit: Self.perClient)
        // Behind a trusted proxy every connection comes from the proxy: the per-client limit is
        // then the forwarded client's, per request, not the TCP peer's.
        // More threads than password checks may run at once (one per core): a flood of logins
        // leaves threads for signed-in users, whose headers are answered from the cache.
        let settings = EmbeddedHTTPServer.Settings(threading: .pool(threads: 2 + ProcessInfo.processInfo.activeProcessorCount), maxBodyBytes: 64 * 1024, timeoutSeconds: 30,
                                                   maxConnections: configuration.web.trustedProxies.isEmpty ? 64 : 256,
                                                   maxConnectionsPerClient: configuration.web.trustedProxies.isEmpty ? Self.perClient : nil)
        let routing = EmbeddedHTTPServer.Routing(
            screen: { head, _ in
                ["GET", "HEAD", "POST"].contains(head.method) ? nil
                    : HTTPServerResponse(status: 405, headers: WebResponse.securityHeaders + [HTTPHeader("Allow", "GET, POST")])
            },
            bodyTooLarge: { _ in WebResponse.text(413, "the form is over 64 KiB") },
            handle: { request in core.console?.handle(request) ?? WebResponse.text(503, "starting") })
        do {
            server = try EmbeddedHTTPServer(address: address, settings: settings, routing: routing)
        } catch {
            throw StartError(description: "cannot listen on \(listen) for the web console: \(error.description)")
        }
        allowedHosts = AllowedHosts(bound: server.boundAddress, configured: configuration.web.hosts)
        core.console = self
    }

    /// Why the console must not listen on `address`, naming the fix; nil when it may. Loopback
    /// is always allowed; any other address needs users (or anyone who reaches it reads the
    /// ledger) and TLS terminated in front (or their passwords cross the network in clear).
    /// `settle web`, the console and `settle check-config` ask the same question.
    package static func refusal(listen: String, address: ListenAddress, hasUsers: Bool,
                                web: Configuration.WebConfiguration) -> String? {
        guard !address.isLoopback else { return nil }
        guard hasUsers else { return needsUsers(listen) }
        guard web.tlsInFront else {
            return "web.listen \(listen) is not a loopback address, and settle web speaks plain HTTP: every password would cross "
                + "the network in clear; terminate TLS in a reverse proxy in front of it and set web.tls_in_front: true, "
                + "or listen on 127.0.0.1 behind that proxy"
        }
        return nil
    }

    /// The refusal of a non-loopback listener without users, naming the fix.
    static func needsUsers(_ listen: String) -> String {
        "web.listen \(listen) is not a loopback address, and anyone who reaches it could read the ledger: set web.users_file "
            + "(lines name:hash from settle web-passwd NAME) so every request needs a password, or listen on 127.0.0.1"
    }

    /// Stops listening once the requests being answered are done (the ledger is closed next).
    package func stop() { server.stop(waitingForHandlers: true) }

    /// Checks the `Host`, authenticates, then routes.
    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        guard allowedHosts.allows(request.header("Host")) else {
            log.warning("web.host_refused", ["host": String((request.header("Host") ?? "(none)").prefix(128)),
                                             "client": request.client?.hostText ?? "unknown"])
            return WebResponse.text(421, "settle web answers only to its own address, localhost and the names in web.hosts; "
                                        + "add this name to web.hosts if a proxy of yours sends it")
        }
        if users == nil, configuration.web.auth == .basic,
           let header = Self.proxyHeaders.first(where: { request.header($0) != nil }) {
            // A loopback console with no users file trusts that only this machine reaches it; a
            // proxy in front opens it to everyone who reaches the proxy.
            log.warning("web.proxied_request_refused", ["header": header, "client": request.client?.hostText ?? "unknown"])
            return WebResponse.text(403, "settle web has no users file, and this request came through a proxy (\(header)): everyone "
                                        + "who reaches the proxy could read the ledger; set web.users_file (settle web-passwd NAME) "
                                        + "so every request needs a password")
        }
        let client = clients.of(request)
        guard inFlight.enter(client) else {
            return WebResponse.text(503, "too many requests at once from \(client); try again in a moment",
                                    extra: [HTTPHeader("Retry-After", "1")])
        }
        defer { inFlight.leave(client) }
        let person: (name: String, role: OperatorRole)
        switch identify(request, client: client) {
        case let .person(name, role): person = (name, role)
        case let .refused(answer): return answer
        }
        let web = WebRequest(request, operatorName: person.name, client: client, role: person.role)
        do {
            return try WebRoutes.route(web, console: self)
        } catch let error as LedgerError {
            log.error("web.ledger_error", ["path": String(request.pathWithoutQuery.prefix(128)), "error": "\(error)"])
            return WebPage.problem(503, "The ledger could not be read", detail: "\(error)", request: web, console: self)
        } catch {
            log.error("web.error", ["path": String(request.pathWithoutQuery.prefix(128)), "error": "\(error)"])
            return WebPage.problem(500, "Something went wrong", detail: "\(error)", request: web, console: self)
        }
    }

    /// Connections (requests, behind a trusted proxy) one client may have at once.
    static let perClient = 16

    /// Headers a reverse proxy adds: a request carrying one did not come from this machine's own user.
    static let proxyHeaders = ["Forwarded", "X-Forwarded-For", "X-Real-IP"]


    /// Holds the console for the server's callbacks, set once the server is up.
    private final class Handler: @unchecked Sendable {
        // Written once, before the first request can arrive, and only read afterwards.
        weak var console: WebConsole?
    }
}
