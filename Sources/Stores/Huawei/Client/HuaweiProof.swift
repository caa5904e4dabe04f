import SettleBase
import SettleModel

/// What proves an IAP Kit purchase: its `purchaseOrderId` (the order id Huawei shows the buyer,
/// the key settle finds the order by) and its `purchaseToken` (a bearer secret: kept in the
/// ledger, never shown, logged or put on a command line). Stored as the module's `StoreProof`.
package struct HuaweiProof: Sendable, Equatable {
    package static let kind = "huawei_purchase"
    /// Huawei's FAQ gives 64 characters for an order id and 512 for a token; settle takes up to
    /// 256 and 1024, and only printable ASCII, so neither can carry a control character.
    package static let maxOrderIdLength = 256
    package static let maxTokenLength = 1024

    package var purchaseOrderId: String
    package var purchaseToken: String

    package init(purchaseOrderId: String, purchaseToken: String) {
        self.purchaseOrderId = purchaseOrderId
        self.purchaseToken = purchaseToken
    }

    /// The proof the backend sends (`{"purchaseOrderId": ..., "purchaseToken": ...}`, as the app
    /// gets them from IAP Kit); the error names the field, never its value.
    package init(json: JSONValue) throws(ProofReadError) {
        guard json.objectMembers != nil else {
            throw ProofReadError("a Huawei proof is a JSON object with purchaseOrderId and purchaseToken")
        }
        func field(_ name: String, max: Int) throws(ProofReadError) -> String {
            guard case let .string(value)? = json[name], !value.isEmpty, value.count <= max,
                value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
            else {
                throw ProofReadError("\(name) must be 1 to \(max) printable ASCII characters")
            }
            return value
        }
        purchaseOrderId = try field("purchaseOrderId", max: Self.maxOrderIdLength)
        purchaseToken = try field("purchaseToken", max: Self.maxTokenLength)
    }

    /// The order's proof, when it is a Huawei one settle wrote.
    package init?(_ proof: StoreProof?) {
        guard let proof, proof.kind == Self.kind, let json = try? JSONValue.parse(proof.proof),
            let read = try? HuaweiProof(json: json)
        else { return nil }
        self = read
    }

    package var storeProof: StoreProof {
        let json = JSONValue.object([
            ("purchaseOrderId", .string(purchaseOrderId)), ("purchaseToken", .string(purchaseToken)),
        ])
        return StoreProof(kind: Self.kind, proof: json.serialized(), key: purchaseOrderId)
    }
}

/// Why a Huawei proof cannot be read; never quotes it.
package struct ProofReadError: Error, Sendable {
    package var message: String
    package init(_ message: String) { self.message = message }
}
