import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// Delivery: the hook grants verified orders on delivery workers of their own, fed by the
/// delivery queue, so verification never runs ahead of the hooks.
extension Reconciler {
    /// How many orders one hook call delivers (`delivery.batch_size`; 1 for a webhook).
    package var deliveryBatchSize: Int { max(1, deliverer.batchSize) }

    /// Delivery workers: as many hooks in flight as verifications (`schedule.concurrency`), or
    /// with batches, enough batches to cover that many orders.
    package var deliveryWorkerCount: Int {
        max(1, (configuration.schedule.concurrency + deliveryBatchSize - 1) / deliveryBatchSize)
    }

    /// How many verified orders may wait for a hook: one round of the delivery workers
    /// (`schedule.concurrency`, or with batches, that many batches' worth).
    package var deliveryCapacity: Int { deliveryWorkerCount * deliveryBatchSize }

    func startDeliveryWorkers(_ pass: Pass) -> DispatchGroup {
        let group = DispatchGroup()
        for _ in 0..<deliveryWorkerCount {
            group.enter()
            Thread {
                // A delivery worker's next hook does not wait on the commit of its last: deferrable.
                CommitPace.$deferrable.withValue(true) { self.deliveryWork(pass) }
                group.leave()
            }.start()
        }
        return group
    }

    private func deliveryWork(_ pass: Pass) {
        while let batch = pass.deliveries.take(limit: deliveryBatchSize) {
            defer { pass.deliveries.finished() }
            if pass.isShuttingDown {
                // No new hook once asked to stop: each order stays `delivering` under its lease, and
                // the next start (or, after the lease, another host) delivers it with the same key.
                for order in batch {
                    log.info("order.delivery_deferred", ["order": order.order.orderId, "why": "shutting down"])
                }
                continue
            }
            do {
                try deliver(batch, pass: pass)
            } catch {
                pass.fail(error)
            }
        }
    }

    /// Runs the hook for `orders` (one call, or one per order without batches) while their
    /// leases are renewed, then records each order's answer.
    ///
    /// An order may have waited in the delivery queue past its lease, and another process may
    /// have taken it over meanwhile: so at the moment the hook starts, an order whose lease is
    /// older than a renewal interval has its claim taken again in one fenced write (owner, and
    /// on PostgreSQL the fencing token, unchanged; the lease pushed out), `stillHeld`. An order
    /// whose claim is gone is left to its new owner, unhooked.
    func deliver(_ orders: [DeliveryQueue.Leased], pass: Pass) throws {
        var items: [(order: Order, purchase: VerifiedPurchase)] = []
        for leased in orders {
            let order = leased.order
            guard let purchase = order.verified else {
                throw LedgerError.invalid("order \(order.orderId) is delivering without verified facts")
            }
            if order.deliveredAt != nil {
                // Delivered before: never again, only the store is still to be told.
                try finishDelivered(order, purchase: purchase, pass: pass)
                continue
            }
            guard !order.userId.isBlank else {
                // Verification never lets such an order through: only a row written in `delivering` gets here.
                let detail = "the order is delivering with an empty user_id; settle never delivers to nobody"
                try ledger.quarantine(orderId: order.orderId, detail: detail)
                log.error("order.needs_attention", [
                    "order": order.orderId, "reason": AttentionReason.rowInvalid.rawValue, "error": detail,
                ])
                pass.count(.needsAttention)
                continue
            }
            guard try stillHeld(leased) else {
                leaseLost(order, "hook_start")
                continue
            }
            items.append((order, purchase))
        }
        guard !items.isEmpty else { return }
        items = try withRefundCounts(items)
        let taken = items.map(\.order)
        let reports = withLeasesRenewed(taken, state: .delivering, leaseSeconds: deliveryLeaseSeconds) {
            deliverer.deliver(batch: items)
        }
        try record(batch: zip(items, reports).map { item, report in (item.order, item.purchase, report) }, pass: pass)
    }

    /// Whether `leased`'s claim is still this process's as its hook starts. A lease taken less
    /// than a renewal interval ago (a third of its length) cannot have lapsed, so no other
    /// process can hold the order, and the lease keeper renews it one interval after the hook
    /// starts, well before it could: no write. An order that waited longer by the ledger's clock
    /// or by the monotonic clock (a slow round of hooks; a wall clock stepped back cannot hide
    /// the wait) is taken again in one fenced write, false when its claim is gone.
    /// Saves a durable transition per order in the common case.
    private func stillHeld(_ leased: DeliveryQueue.Leased) throws(LedgerError) -> Bool {
        let interval = Int64(Double(deliveryLeaseSeconds) * min(leaseRenewalFraction, 1.0 / 3))
        if leased.age(now: ledger.time.unixSeconds) < interval { return true }
        let order = leased.order
        return try ledger.renewLease(orderId: order.orderId, owner: owner, fence: order.fencingToken,
                                     state: .delivering, leaseSeconds: deliveryLeaseSeconds)
    }
}
