import SettleBase
import SettleModel

extension Configuration.WebConfiguration {
    /// How the console learns who asks (`web.auth`).
    package enum Auth: String, Sendable, Equatable {
        /// HTTP basic auth against `web.users_file` (or nobody, on loopback without one).
        case basic
        /// A reverse proxy in `web.trusted_proxies` that signed the person in names them in
        /// `web.proxy_user_header`; a request from any other peer is refused.
        case proxy
    }
}

extension ConfigurationDecoder {
    /// `web.auth`, `web.proxy_user_header`, `web.roles` and `web.default_role`, and what they need
    /// of each other: proxy auth without a header to read or a proxy to believe is refused here,
    /// so `settle web`, `settle check-config` and every command say the same.
    func decodeWebAuth(_ o: inout ConfigObject, into web: inout Configuration.WebConfiguration) throws(ConfigError) {
        if let text = try o.string("auth") {
            guard let auth = Configuration.WebConfiguration.Auth(rawValue: text) else {
                throw ConfigError("\(o.name("auth")): \"\(text)\" is not basic or proxy")
            }
            web.auth = auth
        }
        if let header = try o.string("proxy_user_header") {
            guard Self.isHeaderName(header), !Self.headersNeverAnIdentity.contains(header.lowercased()) else {
                throw ConfigError("\(o.name("proxy_user_header")): \"\(PrintableText.escape(header))\" is not a header "
                                  + "name a proxy sets for the user (like X-Forwarded-User)")
            }
            web.proxyUserHeader = header
        }
        if let value = o.value("roles") {
            var roles = try ConfigObject(value, path: o.name("roles"))
            for name in roles.allKeys() {
                guard let text = try roles.string(name), let role = OperatorRole(rawValue: text) else {
                    throw ConfigError("\(roles.name(name)): a role is viewer, support or admin")
                }
                web.roles[name] = role
            }
        }
        if let text = try o.string("default_role") {
            guard let role = OperatorRole(rawValue: text) else {
                throw ConfigError("\(o.name("default_role")): \"\(text)\" is not viewer, support or admin")
            }
            web.defaultRole = role
        }
        guard web.auth == .proxy else {
            // Keys that only proxy auth reads: set without it, they would look as if they worked.
            for key in ["proxy_user_header", "roles", "default_role"] where o.has(key) {
                throw ConfigError("\(o.name(key)): applies to web.auth proxy only (set \(o.name("auth")): \"proxy\"); "
                                  + "with basic auth a user's role is the third field of their line in web.users_file "
                                  + "(name:hash:role)")
            }
            return
        }
        guard web.proxyUserHeader != nil else {
            throw ConfigError("\(o.name("proxy_user_header")): required with web.auth proxy (the header your proxy "
                              + "sets to the signed-in user, like X-Forwarded-User)")
        }
        guard !web.trustedProxies.isEmpty else {
            throw ConfigError("\(o.name("trusted_proxies")): required with web.auth proxy: the addresses of the "
                              + "proxies whose \(web.proxyUserHeader ?? "header") settle believes "
                              + "(anyone else could send it)")
        }
    }

    /// An HTTP field name (RFC 9110 token), 1 to 64 characters.
    static func isHeaderName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || Array("!#$%&'*+-.^_`|~".utf8).contains(c)
        }
    }

    /// Headers a browser or any client sets itself: never a proxy's word for who signed in.
    static let headersNeverAnIdentity: Set<String> = [
        "authorization", "cookie", "host", "x-forwarded-for", "forwarded", "x-real-ip", "content-type",
        "content-length", "origin", "referer",
    ]
}
