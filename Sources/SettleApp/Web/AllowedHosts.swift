import SettleBase

/// The names the console answers to: the address it is bound to, `localhost` (both on its own
/// port) and the names in `web.hosts`. A page on another site whose name was made to resolve to
/// this address (DNS rebinding) is same-origin with the console as far as the browser knows; its
/// requests still carry its own name in `Host`, so every other `Host` is refused before anything
/// is read. A request without a `Host` (HTTP/1.0) is refused too.
struct AllowedHosts: Sendable {
    let port: UInt16
    /// The bound address's host as a `Host` header writes it ("127.0.0.1", "[::1]"); nil for a
    /// wildcard (0.0.0.0, ::), whose addresses are listed in `web.hosts` instead.
    let boundHost: String?
    /// `web.hosts`, lowercased: "name" (any port) or "name:port".
    let configured: [String]

    init(bound: ListenAddress?, configured: [String]) {
        port = bound?.port ?? 0
        if let bound, !bound.host.allSatisfy({ $0 == 0 }) {
            boundHost = bound.family == .ipv4 ? bound.hostText : "[\(bound.hostText)]"
        } else {
            boundHost = nil
        }
        self.configured = configured.map { $0.lowercased() }
    }

    func allows(_ header: String?) -> Bool {
        guard let header, let (host, port) = Self.split(header.lowercased()) else { return false }
        if host == "localhost" || host == boundHost { return (port ?? 80) == self.port }
        return configured.contains { entry in
            guard let (name, wanted) = Self.split(entry) else { return false }
            return name == host && (wanted == nil || wanted == port)
        }
    }

    /// "name", "name:port", "[v6]" or "[v6]:port"; nil when the port is not a number or the name
    /// is empty.
    static func split(_ text: String) -> (host: String, port: UInt16?)? {
        var host = Substring(text)
        var portText: Substring? = nil
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[...close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { return nil }
                portText = rest.dropFirst()
            }
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "@" }) else { return nil }
        guard let portText else { return (String(host), nil) }
        guard let port = UInt16(portText) else { return nil }
        return (String(host), port)
    }
}
