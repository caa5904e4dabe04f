import Foundation
import SettleBase
import SettleModel

/// A purchase as ONE store's purchase details answer it (one-store.md section 3). The answer
/// names no product and no token: a token asked for under another product answers "no such data".
package struct OneStorePurchase: Sendable, Equatable {
    /// 0 purchased (payment complete), 1 cancelled (refund complete).
    package var purchaseState: Int
    package var consumptionState: Int?
    package var acknowledgeState: Int?
    package var purchaseId: String
    package var purchaseTimeMs: Int64?
    package var developerPayload: String?
    package var quantity: Int

    package static let maxQuantity = 10_000

    package struct Invalid: Error, Sendable, Equatable {
        package var message: String
    }

    package init(json: JSONValue) throws(Invalid) {
        func small(_ key: String) throws(Invalid) -> Int? {
            switch json[key] {
            case nil, .null?: return nil
            case let value?:
                guard let number = value.looseString.flatMap({ Int($0) }), (0...1_000_000).contains(number) else {
                    throw Invalid(message: "the purchase's \(key) is not a small whole number")
                }
                return number
            }
        }
        guard let state = try small("purchaseState") else {
            throw Invalid(message: "the purchase has no purchaseState")
        }
        guard let id = json["purchaseId"]?.looseString, !id.isEmpty else {
            throw Invalid(message: "the purchase has no purchaseId")
        }
        (purchaseState, purchaseId) = (state, id)
        consumptionState = try small("consumptionState")
        acknowledgeState = try small("acknowledgeState")
        purchaseTimeMs = json["purchaseTime"]?.looseInt64.flatMap { $0 >= 0 ? $0 : nil }
        developerPayload = json["developerPayload"]?.looseString
        let count = try small("quantity") ?? 1
        guard (1...Self.maxQuantity).contains(count) else {
            throw Invalid(message: "the purchase's quantity \(count) is not from 1 to \(Self.maxQuantity)")
        }
        quantity = count
    }
}

/// What proves a ONE store purchase: its product id, its purchase token (a bearer secret, kept in
/// the ledger only) and its purchase id (the key settle finds the order by and grants it under).
package struct OneStoreProof: Sendable, Equatable {
    package static let kind = "one_store_purchase"

    package var productId: String
    package var purchaseToken: String
    package var purchaseId: String

    package init(productId: String, purchaseToken: String, purchaseId: String) {
        (self.productId, self.purchaseToken, self.purchaseId) = (productId, purchaseToken, purchaseId)
    }

    /// The proof the backend sends; the error names the field, never its value. A token holding `/`
    /// cannot be asked about at all (ONE store's front server refuses `%2F`), so it is refused here.
    package init(json: JSONValue) throws(ProofFormatError) {
        guard json.objectMembers != nil else {
            throw ProofFormatError("a ONE store proof is a JSON object with productId, purchaseToken and purchaseId")
        }
        func field(_ name: String) throws(ProofFormatError) -> String {
            guard case let .string(value)? = json[name], !value.isEmpty, value.count <= 1024,
                value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
            else {
                throw ProofFormatError("\(name) must be 1 to 1024 printable ASCII characters")
            }
            return value
        }
        self.init(
            productId: try field("productId"), purchaseToken: try field("purchaseToken"),
            purchaseId: try field("purchaseId"))
        guard !purchaseToken.contains("/") else {
            throw ProofFormatError("purchaseToken holds a '/', which ONE store's API cannot be asked about")
        }
    }

    package init?(_ proof: StoreProof?) {
        guard let proof, proof.kind == Self.kind, let json = try? JSONValue.parse(proof.proof),
            let read = try? OneStoreProof(json: json)
        else {
            return nil
        }
        self = read
    }

    package var storeProof: StoreProof {
        let json = JSONValue.object([
            ("productId", .string(productId)), ("purchaseToken", .string(purchaseToken)),
            ("purchaseId", .string(purchaseId)),
        ])
        return StoreProof(kind: Self.kind, proof: json.serialized(), key: purchaseId)
    }
}

/// Why a ONE store proof cannot be read; never quotes it.
package struct ProofFormatError: Error, Sendable {
    package var message: String
    package init(_ message: String) { self.message = message }
}
