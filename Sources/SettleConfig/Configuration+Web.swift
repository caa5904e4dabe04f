import Foundation
import SettleBase
import SettleModel

extension Configuration {
    /// The support console (`settle web`, section `web`): where it listens, who may look, and
    /// whether it may change orders. Absent means every default: loopback, no users, read-only.
    package struct WebConfiguration: Sendable, Equatable {
        /// `HOST:PORT` with a numeric host; a non-loopback address needs `usersFile`.
        package var listen: String = WebConfiguration.defaultListen
        /// `users_file`: lines `name:hash` made by `settle web-passwd NAME`. With it, every request
        /// needs HTTP basic auth, and the operator named in an order's history is that user.
        package var usersFile: SecretFile?
        /// `actions` (default false): retry, assign, resolve, transfer and redeliver as POST forms.
        package var actions = false
        /// `hosts`: the names (`name` or `name:port`) a browser may use for the console besides its
        /// bound address and localhost, such as the name a reverse proxy passes on in `Host`. Any
        /// other `Host` is refused (421): a page whose name re-resolves to this address must not
        /// read or drive the console.
        package var hosts: [String] = []
        /// `tls_in_front` (default false): the operator says a reverse proxy terminates TLS in
        /// front of a non-loopback listener. settle web speaks plain HTTP; without this a
        /// non-loopback listener is refused, since basic auth would cross the network in clear.
        package var tlsInFront = false
        /// `trusted_proxies`: the reverse proxies (IP addresses or CIDR ranges) whose
        /// `X-Forwarded-For` names the client. Login throttling and per-client limits then count
        /// the forwarded client's address, not the proxy's, which everyone behind it shares.
        package var trustedProxies: [AddressRange] = []
        /// `auth` (default basic): `basic` signs people in against `users_file`; `proxy` takes the
        /// user from `proxy_user_header`, believed only from `trusted_proxies`.
        package var auth: Auth = .basic
        /// `proxy_user_header` (required with proxy auth): the header the proxy sets to the user.
        package var proxyUserHeader: String?
        /// `roles` (proxy auth): user name → viewer, support or admin; others get `defaultRole`.
        package var roles: [String: OperatorRole] = [:]
        /// `default_role` (default viewer): the role of a proxy user `roles` does not name.
        package var defaultRole: OperatorRole = .viewer

        package static let defaultListen = "127.0.0.1:8480"

        package init(listen: String = WebConfiguration.defaultListen, usersFile: SecretFile? = nil, actions: Bool = false) {
            self.listen = listen
            self.usersFile = usersFile
            self.actions = actions
        }
    }
}

extension ConfigurationDecoder {
    package func decodeWeb(_ object: ConfigObject) throws(ConfigError) -> Configuration.WebConfiguration {
        var o = object
        var web = Configuration.WebConfiguration()
        if let listen = try o.string("listen") {
            guard ListenAddress(listen) != nil else {
                throw ConfigError("\(o.name("listen")): \"\(listen)\" is not HOST:PORT with a numeric IPv4 or [IPv6] host")
            }
            web.listen = listen
        }
        if let name = try o.string("users_file") {
            web.usersFile = SecretFile(key: o.name("users_file"), path: SecretFile.resolve(name, relativeTo: folder, environment: environment),
                                       searched: SecretFile.candidates(name, relativeTo: folder, environment: environment))
        }
        web.actions = try o.bool("actions", default: false)
        web.tlsInFront = try o.bool("tls_in_front", default: false)
        for text in try o.stringArray("trusted_proxies") ?? [] {
            guard let range = AddressRange(text) else {
                throw ConfigError("\(o.name("trusted_proxies")): \"\(text)\" is not an IP address or CIDR range (like 127.0.0.1 or 10.0.0.0/8)")
            }
            web.trustedProxies.append(range)
        }
        if let hosts = try o.stringArray("hosts") {
            for host in hosts where host.isEmpty || host.contains(where: { " /@?#".contains($0) }) || host.hasPrefix(":") {
                throw ConfigError("\(o.name("hosts")): \"\(host)\" is not a host name, name:port or [IPv6] address")
            }
            web.hosts = hosts
        }
        try decodeWebAuth(&o, into: &web)
        try o.rejectUnknownKeys()
        return web
    }
}
