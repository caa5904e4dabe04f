import XCTest
@testable import SettleModel
import SettleTesting
import SettleBase

/// Issue 36: the verdict is right in every state. Walks every state × reason (the core's and
/// every registered store's, including the fake third store's) × condition (nothing else, the
/// store's breaker open, open for a configuration fault, a hook that cannot start, the hook's
/// last words, a transfer), and holds each verdict to the rules support relies on.
final class VerdictTableTests: XCTestCase {
    private let now: Int64 = 100_000

    private enum Condition: CaseIterable {
        case plain, outage, configurationOutage, hookCannotStart, hookSaid, transfer
    }

    private var reasons: [String?] {
        let store = StoreRegistry.descriptors.flatMap { $0.reasons.keys }
        let all = AttentionReason.allCases.map(\.rawValue) + RejectionReason.allCases.map(\.rawValue)
            + Resolution.allCases.map(\.rawValue) + store
        return [nil] + Array(Set(all)).sorted()
    }

    private func order(_ state: OrderState, _ reason: String?, store: Store, verified: Bool, delivered: Bool) -> Order {
        let purchase = VerifiedPurchase(transactionId: "t-1", originalTransactionId: "t-1", productId: "coins",
                                        environment: "Production", quantity: 1, purchaseDateMs: 90_000_000, expiresDateMs: nil)
        return Order(orderId: "o-1", userId: reason == "unclaimed_purchase" ? "" : "u-1", productId: "coins", state: state,
                     attempts: 1, nextAttemptAt: now + 30, reason: reason, lastError: state == .pending ? "HTTP 503" : nil,
                     verified: verified ? purchase : nil, createdAt: now - 600, updatedAt: now - 60,
                     finishedAt: state == .finished ? now - 60 : nil, store: store, deliveredAt: delivered ? now - 120 : nil)
    }

    private func context(_ condition: Condition, _ order: inout Order) -> VerdictContext {
        switch condition {
        case .plain: return .none
        case .outage:
            return VerdictContext(outage: .init(openedAt: now - 300, probeAt: now + 60, error: "HTTP 503", configurationFault: false))
        case .configurationOutage:
            return VerdictContext(outage: .init(openedAt: now - 300, probeAt: now + 60, error: "status 21004",
                                                configurationFault: true))
        case .hookCannotStart:
            if order.state == .pending { order.lastError = HookFault.cannotStart + "/opt/hook: No such file or directory" }
            return .none
        case .hookSaid:
            return VerdictContext(hookSaid: "user u-1 is banned")
        case .transfer:
            let action = SupportAction(orderId: "o-1", kind: .transfer, number: 1, state: .done, step: .done, fromUser: "u-1",
                                       toUser: "u-2", note: "T-1", requestedBy: "alice via web", requestedAt: now - 500,
                                       doneAt: now - 400, nextAttemptAt: now - 500)
            return VerdictContext(supportActions: [action])
        }
    }

    func testEveryStateReasonAndCondition_tellsTheTruth() {
        var checked = 0
        for store in StoreRegistry.stores {
            for state in OrderState.allCases {
                let stateReasons: [String?] = [.needsAttention, .rejected, .finished].contains(state) ? reasons : [nil]
                for reason in stateReasons {
                    for verified in [false, true] {
                        for delivered in [false, true] where !delivered || verified {
                            for condition in Condition.allCases {
                                var o = order(state, reason, store: store, verified: verified, delivered: delivered)
                                let ctx = context(condition, &o)
                                check(Verdict(o, now: now, context: ctx), o, condition,
                                      "\(store.rawValue) \(state.rawValue) \(reason ?? "-") v\(verified) d\(delivered) \(condition)")
                                checked += 1
                            }
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 1_000)
    }

    private func check(_ v: Verdict, _ o: Order, _ condition: Condition, _ label: String) {
        let all = v.lines.map(\.1).joined(separator: " | ")
        XCTAssertFalse(v.charged.isEmpty, label)
        XCTAssertFalse(v.delivered.isEmpty, label)
        // "yes" only with the store's confirmation; delivered "yes" only with a grant.
        if v.charged.hasPrefix("yes") { XCTAssertNotNil(o.verified, label) }
        if v.delivered.hasPrefix("yes") { XCTAssertTrue(o.state == .finished || o.deliveredAt != nil, "\(label): \(all)") }
        // A finished order asks nothing of anyone; a person's decision ends the story too.
        if o.state == .finished { XCTAssertNil(v.next, "\(label): \(all)") }
        // An order set aside (not resolved by a person) always says what to do, with a command.
        if [.needsAttention, .rejected].contains(o.state), Resolution(rawValue: o.reason ?? "") == nil {
            XCTAssertTrue(v.next?.contains("settle ") == true, "\(label): \(all)")
        }
        // Every command in it can be pasted: no placeholder for the order's own id.
        XCTAssertFalse((v.next ?? "").contains(" ID "), "\(label): \(all)")
        XCTAssertFalse((v.next ?? "").hasSuffix(" ID"), "\(label): \(all)")
        // The store's answer is quoted: "not yet" never stands above it.
        if let reason = o.reason, ["token_unverifiable", "purchase_state_unclear", "proof_unbound", "history_incomplete"].contains(reason),
           o.state == .needsAttention, o.verified == nil {
            XCTAssertFalse(v.charged.contains("not yet"), "\(label): \(all)")
        }
        let waitsForStore = (o.state == .pending && o.lastError?.hasPrefix(HookFault.cannotStart) != true)
            || (o.state == .delivering && o.deliveredAt != nil)
        switch condition {
        case .outage where waitsForStore:
            XCTAssertTrue(v.why?.contains("\(o.store.owner) unavailable since") == true, "\(label): \(all)")
            XCTAssertTrue(v.next?.contains("probes \(o.store.owner) at") == true, "\(label): \(all)")
            XCTAssertFalse(all.contains("retries by itself"), "\(label): \(all)")
        case .configurationOutage where waitsForStore:
            XCTAssertTrue(v.why?.contains("configuration for \(o.store.owner) is wrong") == true, "\(label): \(all)")
            XCTAssertTrue(v.next?.contains("settle check-config") == true, "\(label): \(all)")
            XCTAssertFalse(v.next?.hasPrefix("nothing") == true, "\(label): \(all)")
        case .outage, .configurationOutage:
            // A store's outage is not why an order that does not wait for it stands still.
            XCTAssertFalse(all.contains("unavailable since"), "\(label): \(all)")
            XCTAssertFalse(all.contains("is wrong since"), "\(label): \(all)")
        case .hookCannotStart where o.state == .pending:
            XCTAssertTrue(v.why?.contains("the delivery hook cannot start") == true, "\(label): \(all)")
            XCTAssertTrue(v.why?.contains("settle check-config") == true, "\(label): \(all)")
            XCTAssertTrue(v.next?.contains("will not get past this by itself") == true, "\(label): \(all)")
            XCTAssertFalse(all.contains("retries by itself"), "\(label): \(all)")
        case .hookSaid:
            let failedAtHook = (o.state == .pending && o.verified != nil)
                || (o.state == .needsAttention && o.verified != nil
                    && ["hook_refused", "hook_unconfirmed", "already_granted_unclear", "attempts_exhausted"].contains(o.reason ?? ""))
            XCTAssertEqual(all.contains("the hook said: \"user u-1 is banned\""), failedAtHook, "\(label): \(all)")
        case .transfer:
            XCTAssertEqual(v.support, "transfer 1 from u-1 to u-2: done \(Timestamp.relative(now - 400, now: now)) (asked by alice via web)", label)
        case .plain, .hookCannotStart:
            XCTAssertNil(v.support, label)
        }
        if o.state == .pending, condition != .hookCannotStart, condition != .configurationOutage {
            XCTAssertTrue(v.next?.hasPrefix("nothing:") == true, "\(label): \(all)")
        }
    }
}
