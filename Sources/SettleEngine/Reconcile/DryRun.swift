import SettleModel
import SettleBase

/// What `reconcile --dry-run` found: per order, what a real pass would do.
package struct DryRunReport: Sendable, Equatable {
    package var lines: [String] = []
    package var wouldGrant = 0
    package var wouldReject = 0
    package var wouldRetry = 0
    package var missing = 0
    package var storeAnswers = 0
    package var storeWideFailures = 0

    package var storeUnavailableForWholePass: Bool { storeAnswers == 0 && storeWideFailures > 0 }

    package var summaryLine: String {
        "dry run over \(Plural.count(wouldGrant + wouldReject + wouldRetry, "order")): \(wouldGrant) would be granted, "
            + "\(wouldReject) rejected, \(wouldRetry) retried; nothing was changed"
    }
}

extension Reconciler {
    /// Verifies due (or named) orders with their stores and reports what would happen, without
    /// claiming, writing or calling a hook.
    package func dryRun(orderIds: [String] = [], limit: Int = 1000) throws -> DryRunReport {
        var report = DryRunReport()
        var orders: [Order] = []
        if orderIds.isEmpty {
            orders = try ledger.dueOrders(limit: limit)
        } else {
            for id in orderIds {
                guard let record = try ledger.orderRecord(id) else {
                    report.lines.append("\(id): no such order")
                    report.missing += 1
                    continue
                }
                guard record.order.state == .pending else {
                    report.lines.append("\(id): \(record.order.state.rawValue), nothing to do")
                    continue
                }
                orders.append(record.order)
            }
        }
        for order in orders {
            let verification = try Reconciler.verification(of: order, by: verifier)
            if case .storeUnavailable = verification.outcome {
                report.storeWideFailures += 1
            } else if verification.storeAnswered {
                report.storeAnswers += 1
            }
            switch verification.outcome {
            case let .verified(match):
                try predictGrant(of: order, among: match.candidates, into: &report)
            case let .rejected(reason, detail):
                report.wouldReject += 1
                report.lines.append("\(order.orderId): would reject: \(reason.rawValue) (\(detail))")
            default:
                report.wouldRetry += 1
                report.lines.append("\(order.orderId): " + Self.waiting(verification.outcome, of: order))
            }
        }
        return report
    }

    /// The same choice the reserving write makes: a purchase this order already holds (its grant
    /// was reserved and only its hook has yet to succeed) is delivered again; else the first
    /// candidate nobody holds is granted; else every matching purchase is someone else's.
    private func predictGrant(of order: Order, among candidates: [VerifiedPurchase],
                              into report: inout DryRunReport) throws {
        var free: VerifiedPurchase?
        for candidate in candidates {
            switch try ledger.grantHolder(of: candidate) {
            case .order(order.orderId)?:
                report.wouldGrant += 1
                report.lines.append("\(order.orderId): would deliver transaction \(candidate.transactionId) again "
                    + "(\(candidate.productId) x\(candidate.quantity)) to user \(order.userId): this order holds its grant "
                    + "and waits for its hook")
                return
            case nil where free == nil: free = candidate
            default: break
            }
        }
        if let p = free {
            report.wouldGrant += 1
            report.lines.append("\(order.orderId): would grant transaction \(p.transactionId) (\(p.productId) x\(p.quantity), \(p.environment)) to user \(order.userId)")
        } else {
            report.wouldReject += 1
            report.lines.append("\(order.orderId): would not grant: every matching purchase is already granted")
        }
    }

    /// What the dry run says of an order that would not be settled this pass.
    private static func waiting(_ outcome: VerificationOutcome, of order: Order) -> String {
        switch outcome {
        case let .needsAttention(reason, detail): "would need attention: \(reason.rawValue) (\(detail))"
        case let .retry(message): "would retry later: \(message)"
        case let .storeUnavailable(message, _): "\(order.store.owner) unavailable: \(message)"
        case let .paced(message): "would wait for the store's rate limit: \(message)"
        case let .configurationFault(message): "configuration fault: \(message)"
        case .verified, .rejected: ""
        }
    }
}
