import SettleBase
import SettleModel
import SettleLedger

/// The pass's bookkeeping around its orders: before the claims, the ledger tidied and the
/// leftovers of stopped processes rescued; after them, the breakers and the pacer's buckets
/// saved and the refund deadlines told.
extension Reconciler {
    /// Old history pruned (`history_retention_days`), and rows no pass can work on set aside
    /// for a person.
    func tidyLedger() throws(LedgerError) {
        if let days = configuration.historyRetentionDays {
            let pruned = try ledger.pruneHistory(olderThanDays: days)
            if pruned > 0 { log.info("history.pruned", ["rows": pruned, "older_than_days": days]) }
        }
        for id in try ledger.quarantineMalformedRows() {
            log.error("order.needs_attention", ["order": id, "reason": AttentionReason.rowInvalid.rawValue])
        }
        for tidy in LedgerTidying.registered { try tidy(ledger, log) }
    }

    /// What earlier passes left claimed and no one works on any more, taken back: a verification
    /// goes back to pending, a delivery is done again with the same key, a side job is requeued.
    func rescueLeftovers() throws(LedgerError) -> RescueResult {
        let rescued = try ledger.rescue(owner: owner)
        for id in rescued.requeued { log.warning("order.rescued", ["order": id, "to": "pending"]) }
        for id in rescued.redeliver { log.warning("order.rescued", ["order": id, "to": "redeliver"]) }
        if rescued.sideJobsTakenBack > 0 { log.warning("side_work.rescued", ["jobs": "\(rescued.sideJobsTakenBack)"]) }
        return rescued
    }

    /// Each store whose breaker holds its orders back, or lets one through as its probe.
    func logBreakers(_ breakers: [Store: StoreBreaker], now: Int64) {
        for (store, breaker) in breakers.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            switch breaker.permission(now: now) {
            case .claim: break
            case let .wait(until):
                // Its rescued deliveries need no store, so they still happen; the other store's orders go on.
                log.info("\(store.logName).breaker_open", ["store": store.rawValue,
                                                          "retry_at": Timestamp.rfc3339(unixSeconds: until),
                                                          "last_error": breaker.lastError])
            case .probe:
                log.info("\(store.logName).breaker_probe", ["store": store.rawValue, "last_error": breaker.lastError])
            }
        }
    }

    /// The breakers the pass changed, saved; one that opened is an error in the log.
    func saveBreakers(_ breakers: [Store: StoreBreaker], openedFrom before: [Store: StoreBreaker]) throws(LedgerError) {
        for (store, opened) in breakers where opened != before[store] {
            var breaker = opened
            // A store that refunds unacknowledged purchases is probed again before the first of
            // its orders would be refunded, however long its cool-down (or Retry-After) says.
            if breaker.state == .open, store.refundWindowSeconds != nil, let retryAt = breaker.retryAt,
               let first = try ledger.refundDeadlines(limit: 20).first(where: { $0.store == store })?.refundAt {
                let probeAt = max(ledger.time.unixSeconds, first.saturatingSubtracting(Self.refundDeadlineMargin))
                breaker.retryAt = min(retryAt, probeAt)
            }
            try ledger.saveBreaker(breaker, of: store)
            if breaker.state == .open && before[store]?.state == .closed {
                log.error("\(store.logName).breaker_opened", [
                    "store": store.rawValue, "retry_at": breaker.retryAt.map { Timestamp.rfc3339(unixSeconds: $0) },
                    "last_error": breaker.lastError,
                ])
            } else if breaker.state == .closed, let was = before[store], was.state == .open {
                // The probe's answer closed it: the end of the outage, as plainly as its start.
                log.info("\(store.logName).breaker_closed", [
                    "store": store.rawValue, "open_since": was.lastErrorAt.map { Timestamp.rfc3339(unixSeconds: $0) },
                    "last_error": was.lastError,
                ])
            }
        }
    }

    /// Once a pass, for `settle status` and the metrics: what each bucket of this host did.
    func savePacerBuckets(hosts: Int) throws(LedgerError) {
        guard let pacer else { return }
        let buckets = pacer.snapshots()
        metrics?.observePacer(buckets)
        let now = ledger.time.unixSeconds
        if savedBuckets.withLock({ $0.buckets != buckets || now - $0.at >= PostgresLedger.liveWindowSeconds / 2 }) {
            try ledger.savePacerBuckets(host: owner.host, hosts: hosts, buckets)
            savedBuckets.withLock { $0 = (buckets, now) }
        }
    }

    /// A store with a refund window (Google: three days) refunds a purchase it was not told of:
    /// each one with less than a day left is a warning (and `settle_play_ack_deadline_soon`).
    func warnOfRefundDeadlines() throws(LedgerError) {
        let now = ledger.time.unixSeconds
        for deadline in try ledger.refundDeadlines(limit: 20) where deadline.isUrgent(now: now) {
            let store = deadline.store
            log.warning("\(store.logName).ack_deadline_soon", [
                "order": deadline.orderId, "state": deadline.state.rawValue, "delivered": deadline.delivered,
                "refund_at": Timestamp.rfc3339(unixSeconds: deadline.refundAt), "estimated": !deadline.exact,
                "why": "\(store.owner) refunds a purchase it was not told of within \(Timestamp.age(store.refundWindowSeconds ?? 0))",
            ])
        }
    }
}
