import SettleBase
import SettleModel

extension Order {
    /// The `transactionId` a signed transaction's payload claims, unverified: a lookup key only
    /// (verification checks the signature, and that it agrees with the order).
    package static func transactionId(namedIn jws: String) -> String? {
        identifier("transactionId", namedIn: jws)
    }

    /// The `appTransactionId` a signed transaction's payload claims, unverified: a lookup key only.
    package static func appTransactionId(namedIn jws: String) -> String? {
        identifier("appTransactionId", namedIn: jws)
    }

    private static func identifier(_ key: String, namedIn jws: String) -> String? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(parts[1]), let json = try? JSONValue.parse(payload),
              case let .string(id)? = json[key], !id.isEmpty, id.count <= 64 else { return nil }
        return id
    }
}
