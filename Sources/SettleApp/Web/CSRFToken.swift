import Foundation
import SettleBase

/// The token each action form carries: `<issued unix seconds>.<HMAC-SHA256 of operator and time>`
/// under a secret made when the process starts. A form is valid for `lifetimeSeconds` and only
/// for the operator it was made for; another site can neither read one nor make one.
final class CSRFToken: Sendable {
    let lifetimeSeconds: Int64
    private let secret = Data(SecureRandom.bytes(32))
    private let time: any TimeSource

    init(time: any TimeSource, lifetimeSeconds: Int64 = 4 * 3600) {
        self.time = time
        self.lifetimeSeconds = lifetimeSeconds
    }

    func token(for operatorName: String) -> String {
        let issued = time.unixSeconds
        return "\(issued).\(mac(operatorName, issued))"
    }

    func isValid(_ token: String?, for operatorName: String) -> Bool {
        guard let token, let dot = token.firstIndex(of: "."), let issued = Int64(token[..<dot]) else { return false }
        // The issued time is the client's number: compared with bounds made from this clock, never
        // subtracted (Int64.min minus now traps), so a forged time is just a refusal.
        let now = time.unixSeconds
        guard issued >= 0, issued <= now + 60, issued >= now - lifetimeSeconds else { return false }
        return ConstantTime.equal(Array(token[token.index(after: dot)...].utf8), Array(mac(operatorName, issued).utf8))
    }

    private func mac(_ operatorName: String, _ issued: Int64) -> String {
        HMACSHA256.hex(key: secret, message: Data("\(operatorName)\n\(issued)".utf8))
    }
}
