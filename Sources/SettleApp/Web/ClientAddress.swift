import SettleBase

/// Who a request comes from, for throttling and per-client limits: the TCP peer, unless the peer
/// is one of `web.trusted_proxies`; then the right-most `X-Forwarded-For` address that is not
/// itself a trusted proxy (the one the last trusted proxy saw). An untrusted peer's
/// `X-Forwarded-For` is ignored: anyone can write one.
struct ClientAddress: Sendable {
    let trusted: [AddressRange]

    func of(_ request: HTTPServerRequest) -> String {
        guard let peer = request.client else { return "unknown" }
        guard isTrusted(peer.host) else { return peer.hostText }
        let forwarded = request.headers.filter { $0.name.lowercased() == "x-forwarded-for" }
            .flatMap { $0.value.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in forwarded.reversed() {
            guard let bytes = AddressRange.parse(hop) else { return "unreadable-forwarded-address" }
            if !isTrusted(bytes) { return hop.lowercased() }
        }
        // Nothing forwarded (or only trusted hops): the proxy itself asks.
        return peer.hostText
    }

    func isTrusted(_ address: [UInt8]) -> Bool { trusted.contains { $0.contains(address) } }
}
