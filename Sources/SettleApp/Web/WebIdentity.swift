import Foundation
import SettleBase
import SettleModel
import SettleLedger
import Synchronization

/// Who a request is from (`web.auth`), before anything is read: a person with a role, or the
/// answer that refuses them. Sign-ins are audited once a credential (basic) or a session
/// (proxy) — never once a request — and failed ones as `refused`.
enum WebIdentity {
    enum Outcome {
        case person(name: String, role: OperatorRole)
        case refused(HTTPServerResponse)
    }
}

extension WebConsole {
    func identify(_ request: HTTPServerRequest, client: String) -> WebIdentity.Outcome {
        switch configuration.web.auth {
        case .proxy: return identifyByProxy(request, client: client)
        case .basic: return identifyByPassword(request, client: client)
        }
    }

    private func identifyByPassword(_ request: HTTPServerRequest, client: String) -> WebIdentity.Outcome {
        guard let users else { return .person(name: "local", role: .admin) }
        let authorization = request.header("Authorization")
        // A header checked right before is a signed-in user: never throttled by others' failures.
        let known = users.isKnown(authorization: authorization)
        if !known, let wait = throttle.retryAfter(client: client, user: WebUsers.name(in: authorization)) {
            return .refused(WebResponse.text(429, "too many failed logins from \(client); try again in \(wait) s",
                                             extra: [HTTPHeader("Retry-After", String(wait))]))
        }
        switch users.check(authorization: authorization) {
        case let .user(name):
            let role = users.role(of: name)
            if !known {
                let person = Operator(name: name, channel: .web, role: role, source: client)
                audit(AuditEntry(person, action: "sign_in", subject: name, detail: "password"))
            }
            return .person(name: name, role: role)
        case .missing:
            return .refused(Self.unauthorized)
        case .busy:
            return .refused(WebResponse.text(503, "settle web is checking other passwords; try again in a moment",
                                             extra: [HTTPHeader("Retry-After", "1")]))
        case let .refused(name):
            throttle.recordFailure(client: client, user: name)
            log.warning("web.login_failed", ["user": name, "client": client])
            // A name that is no user's may be a password typed in the wrong field: never kept.
            let who = users.knows(name) ? name : "unknown"
            audit(AuditEntry(Operator(name: who, channel: .web, source: client), action: "sign_in", subject: who,
                             detail: "wrong name or password", outcome: .refused))
            return .refused(Self.unauthorized)
        }
    }

    /// `web.auth: proxy`: the user is the one `web.proxy_user_header` names, believed only when
    /// the TCP peer itself is a trusted proxy (a forwarded address proves nothing: anyone can
    /// write one) and the header is there once, holding a user name. Its value is never echoed
    /// or logged: a misconfigured proxy could put a token there.
    private func identifyByProxy(_ request: HTTPServerRequest, client: String) -> WebIdentity.Outcome {
        let header = configuration.web.proxyUserHeader ?? ""
        guard let peer = request.client, clients.isTrusted(peer.host) else {
            let peerText = request.client?.hostText ?? "unknown"
            log.warning("web.proxy_identity_refused", ["peer": peerText, "reason": "peer not in web.trusted_proxies"])
            let why = "settle web (web.auth proxy) believes \(header) only from the proxies in web.trusted_proxies, "
                + "and this request came from \(peerText): reach the console through your proxy, or add the proxy's "
                + "address to web.trusted_proxies"
            return .refused(WebResponse.text(403, why))
        }
        let values = request.headers.filter { $0.name.lowercased() == header.lowercased() }
            .map { $0.value.trimmingCharacters(in: .whitespaces) }
        guard values.count == 1, let name = values.first, WebUsers.isName(name) else {
            let reason = values.isEmpty ? "no \(header) header"
                : values.count > 1 ? "\(header) sent more than once" : "\(header) is not a user name"
            log.warning("web.proxy_identity_refused", ["peer": peer.hostText, "client": client, "reason": reason])
            let why = "settle web (web.auth proxy): \(reason); the proxy must sign the person in and set \(header) "
                + "to their user name (letters, digits and ._@-, 1 to 64 characters), once, replacing any the client "
                + "sent"
            return .refused(WebResponse.text(401, why))
        }
        let role = configuration.web.roles[name] ?? configuration.web.defaultRole
        if proxySessions.isNew(name, now: time.unixSeconds) {
            let person = Operator(name: name, channel: .web, role: role, source: client)
            audit(AuditEntry(person, action: "sign_in", subject: name, detail: "proxy \(header)"))
        }
        return .person(name: name, role: role)
    }

    static let unauthorized = WebResponse.text(
        401, "settle web: sign in with your console user (settle web-passwd NAME made it)",
        extra: [HTTPHeader("WWW-Authenticate", "Basic realm=\"settle\", charset=\"UTF-8\"")])
}

/// The proxy users seen lately: a user's first request, or the first after an hour without one,
/// starts a session (one `sign_in` in the audit log).
final class ProxySessions: Sendable {
    private let lastSeen = Mutex<[String: Int64]>([:])
    static let idleSeconds: Int64 = 3600

    func isNew(_ name: String, now: Int64) -> Bool {
        lastSeen.withLock { seen in
            let previous = seen[name]
            if seen.count >= 10_000 { seen.removeAll() }
            seen[name] = now
            return previous.map { now - $0 >= Self.idleSeconds } ?? true
        }
    }
}
