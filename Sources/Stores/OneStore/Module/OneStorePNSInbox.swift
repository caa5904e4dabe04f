import Foundation
import SettleBase
import SettleModel
import SettleOneStore
import SettleLedger
import SettleEngine

/// ONE store's payment notifications (PNS, one-store.md section 7) at `one_store.notifications_path`.
///
/// A message is stored only once its `signature` verifies with the app's license key
/// (`SHA512withRSA` over the message without its `signature` member, as received; or, since the
/// exact signed bytes are not documented, over the compact JSON of the other members in the order
/// received), once per purchase and state, before ONE store is answered 200. ONE store warns that
/// messages may be lost or late, so none is acted on by itself: a completed payment is read from
/// ONE store before it becomes an order, and a cancellation is revoked only once the purchase,
/// read again, shows it cancelled.
package struct OneStorePNSInbox: Sendable {
    package let ledger: any SettleLedger
    package let verifier: OneStoreVerifier
    package let licenseKey: RSAPublicKey
    package let binding: UserBinding
    package let log: Log

    package init(
        ledger: any SettleLedger, verifier: OneStoreVerifier, licenseKey: RSAPublicKey, binding: UserBinding, log: Log
    ) {
        (self.ledger, self.verifier, self.licenseKey, self.binding, self.log) = (
            ledger, verifier, licenseKey, binding, log
        )
    }

    package func answer(_ request: HTTPServerRequest) -> (response: HTTPServerResponse, needsPass: Bool) {
        guard request.body.count <= 64 * 1024, let body = try? JSONValue.parse(request.body),
            let members = body.objectMembers,
            case let .string(signature)? = body["signature"]
        else {
            return (
                HTTPServerResponse.listenerReply(400, "unreadable: a PNS message is a JSON object with its signature"),
                false
            )
        }
        guard Self.verifies(raw: request.body, members: members, signature: signature, key: licenseKey) else {
            log.warning(
                "one_store.pns_refused", ["why": "the signature does not verify with one_store.license_key_file"])
            return (HTTPServerResponse.listenerReply(401, "refused: the signature does not verify"), false)
        }
        let settings = verifier.client.settings
        if let client = (body["clientId"] ?? body["packageName"])?.looseString,
            client != settings.clientId && client != settings.packageName
        {
            // Signed with this app's key but naming another app: nothing of ours.
            return (HTTPServerResponse.listenerReply(200, "ignored: another app"), false)
        }
        guard let purchaseId = body["purchaseId"]?.looseString, !purchaseId.isEmpty,
            let state = body["purchaseState"]?.looseString, ["COMPLETED", "CANCELED"].contains(state)
        else {
            return (HTTPServerResponse.listenerReply(200, "noted: not a payment or a cancellation"), false)
        }
        do {
            let fresh = try ledger.storeOneStoreNotification(
                requestId: "pns:\(purchaseId):\(state)", purchaseState: state,
                purchaseId: purchaseId, payload: body.serialized())
            log.info("one_store.pns_stored", ["purchase": purchaseId, "state": state, "duplicate": !fresh])
            return (HTTPServerResponse.listenerReply(200, fresh ? "stored" : "duplicate"), fresh)
        } catch {
            log.error("one_store.pns_not_stored", ["error": "\(error)"])
            return (HTTPServerResponse.listenerReply(503, "not stored"), false)
        }
    }

    /// The signed bytes are the message without its `signature` member: as received (the member
    /// cut out of the bytes), or re-serialized compactly in the order received.
    static func verifies(raw: Data, members: [(String, JSONValue)], signature: String, key: RSAPublicKey) -> Bool {
        guard let signatureBytes = Data(base64Encoded: signature) else { return false }
        let text = String(decoding: raw, as: UTF8.self)
        let member = "\"signature\":" + JSONValue.string(signature).serialized()
        var candidates: [String] = []
        for cut in ["," + member, member + ","] where text.contains(cut) {
            candidates.append(text.replacingOccurrences(of: cut, with: ""))
        }
        candidates.append(JSONValue.object(members.filter { $0.0 != "signature" }).serialized())
        return candidates.contains { key.verifySHA512(signature: signatureBytes, message: Data($0.utf8)) }
    }

    package func processPending(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let leaseSeconds = Int64(work.seconds.rounded(.up)) + 300
        var outcome = SideWorkOutcome.idle
        var waiting: [OneStoreNotificationRecord] = []
        var done = 0
        claiming: while done + waiting.count < 200, !work.isSpent {
            let claimed = try ledger.claimOneStoreNotifications(limit: 16, leaseSeconds: leaseSeconds)
            if claimed.isEmpty { break }
            for (index, record) in claimed.enumerated() {
                defer { work.progress() }
                switch try step(record) {
                case let .done(result):
                    outcome = outcome.then(.answered)
                    guard
                        try ledger.finishOneStoreNotification(
                            record, outcome: result.outcome, detail: result.detail,
                            orderId: result.orderId)
                    else { continue }
                    log.info(
                        "one_store.pns",
                        ["state": record.purchaseState, "outcome": result.outcome, "order": result.orderId])
                    done += 1
                case .waiting:
                    waiting.append(record)
                case let .storeFailed(verification):
                    if case let .storeUnavailable(message, retryAfter) = verification.outcome {
                        outcome = outcome.then(.storeUnavailable(message, retryAfter: retryAfter))
                    } else if case let .configurationFault(message) = verification.outcome {
                        outcome = outcome.then(.configurationFault(message))
                    }
                    waiting += claimed[index...]
                    break claiming
                }
            }
        }
        try ledger.releaseOneStoreNotifications(waiting)
        return outcome
    }

    enum Step {
        case done((outcome: String, detail: String?, orderId: String?))
        /// Looked at again at the next pass (a cancellation the purchase does not show yet).
        case waiting
        case storeFailed(Verification)
    }

    /// How long a cancellation waits for the purchase to show it before it is left to the re-reads.
    static let cancellationConfirmationSeconds: Int64 = 86_400

    private func step(_ record: OneStoreNotificationRecord) throws(LedgerError) -> Step {
        guard let body = try? JSONValue.parse(record.payload), let productId = body["productId"]?.looseString,
            let token = body["purchaseToken"]?.looseString, let purchaseId = body["purchaseId"]?.looseString,
            let proof = try? OneStoreProof(
                json: .object([
                    ("productId", .string(productId)), ("purchaseToken", .string(token)),
                    ("purchaseId", .string(purchaseId)),
                ]))
        else {
            return .done(("unreadable", "a message without a usable productId, purchaseToken and purchaseId", nil))
        }
        let purchase: OneStorePurchase
        switch verifier.read(proof) {
        case let .found(found, _): purchase = found
        case let .verification(verification):
            switch verification.outcome {
            case .storeUnavailable, .configurationFault: return .storeFailed(verification)
            default:
                return .done(("purchase_not_found", "ONE store does not show purchase \(purchaseId) to settle", nil))
            }
        }
        guard purchase.purchaseId == purchaseId else {
            return .done(
                (
                    "not_applied",
                    "the token is ONE store's purchase \(purchase.purchaseId), not the message's \(purchaseId)", nil
                ))
        }
        if record.purchaseState == "CANCELED" {
            guard purchase.purchaseState == 1 else {
                // Read again at the next passes for a day (ONE store may show it later), then left to the re-reads.
                guard
                    ledger.time.unixSeconds.saturatingSubtracting(record.receivedAt)
                        >= Self.cancellationConfirmationSeconds
                else { return .waiting }
                return .done(
                    ("not_confirmed", "the purchase read again for a day is not cancelled: nothing was revoked", nil))
            }
            let outcomes = try ledger.applyStoreRefund(
                store: .oneStore, grantKey: purchaseId, kind: "CANCELED", reason: nil,
                why: "ONE store cancelled purchase \(purchaseId)", source: "ONE store PNS")
            return .done(
                (
                    outcomes.isEmpty ? "no_order" : "revoked",
                    outcomes.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", "),
                    outcomes.keys.sorted().first
                ))
        }
        guard purchase.purchaseState == 0 else {
            return .done(("not_purchased", "ONE store says the purchase is not paid", nil))
        }
        let placed = try ledger.place(
            ReportedPurchase(
                store: .oneStore, key: purchaseId, productId: productId, proof: proof.storeProof,
                accountId: purchase.developerPayload, orderId: "onestore-" + purchaseId,
                origin: "one_store_notification",
                reported: "ONE store reported purchase \(purchaseId)"),
            binding: binding)
        if placed.outcome == "order_created" {
            log.warning("order.created_from_notification", ["order": placed.orderId, "store": Store.oneStore.rawValue])
        }
        return .done(placed)
    }
}

/// Since PNS messages may be lost, recently delivered purchases are read again every
/// `one_store.reread_interval_seconds` until their three-day window (and a day more) has passed:
/// one ONE store shows cancelled is taken back once, as a cancellation message would be.
package struct OneStoreRereads: Sendable {
    package let ledger: any SettleLedger
    package let verifier: OneStoreVerifier
    package let intervalSeconds: Double
    package let log: Log

    package static let windowSeconds: Int64 = 4 * 86_400
    package static let batch = 200

    package init(ledger: any SettleLedger, verifier: OneStoreVerifier, intervalSeconds: Double, log: Log) {
        (self.ledger, self.verifier, self.intervalSeconds, self.log) = (ledger, verifier, intervalSeconds, log)
    }

    package func rereadIfDue(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome {
        let now = ledger.time.unixSeconds
        if let last = try ledger.oneStoreRereadAt(), Double(now.saturatingSubtracting(last)) < intervalSeconds {
            return .idle
        }
        var outcome = SideWorkOutcome.idle
        var revoked = 0
        for order in try ledger.recentOneStoreGrants(withinSeconds: Self.windowSeconds, limit: Self.batch) {
            guard !work.isSpent else { return outcome }
            defer { work.progress() }
            guard let proof = OneStoreProof(order.storeProof) else { continue }
            switch verifier.read(proof) {
            case let .found(purchase, _):
                outcome = outcome.then(.answered)
                guard purchase.purchaseState == 1 else { continue }
                let outcomes = try ledger.applyStoreRefund(
                    store: .oneStore, grantKey: purchase.purchaseId, kind: "CANCELED", reason: nil,
                    why: "ONE store shows purchase \(purchase.purchaseId) cancelled",
                    source: "ONE store re-read")
                revoked += outcomes.values.filter { $0 == "revoke_queued" }.count
            case let .verification(verification):
                if case let .storeUnavailable(message, retryAfter) = verification.outcome {
                    return outcome.then(.storeUnavailable(message, retryAfter: retryAfter))
                }
                if case let .configurationFault(message) = verification.outcome {
                    return outcome.then(.configurationFault(message))
                }
            }
        }
        try ledger.markOneStoreReread(at: now)
        log.info("one_store.reread", ["revoked": revoked])
        return outcome
    }
}
