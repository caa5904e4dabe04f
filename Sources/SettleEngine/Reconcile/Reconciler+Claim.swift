import Foundation
import SettleModel
import SettleLedger

/// Claims: the verification workers take due (or named, or rescued) orders from the ledger,
/// a batch per transaction, each worker from its home store first.
extension Reconciler {
    /// How many due orders one claim takes: one transaction (and commit) for several orders,
    /// few enough that the batch is worked on at once by the other verification workers: a
    /// quarter of `schedule.concurrency`, at most 16; half on SQLite, where a claim (which its
    /// worker waits on) ends the group commit's wait for company, so fewer claims make fewer and
    /// larger commits (docs/performance.md, "Fewer claims").
    package var claimBatchSize: Int {
        max(1, min(16, configuration.schedule.concurrency / (ledger.sharesCommits ? 2 : 4)))
    }

    /// The verification workers claim and verify until nothing is left to claim or the pass stops.
    func claimAndVerify(_ pass: Pass) {
        let recording = ledger.sharesCommits ? startRecorders(pass) : nil
        defer {
            // Writes handed over are committed and their orders queued before the deliveries can end.
            pass.handedOver.wait()
            pass.answers.producersFinished()
            recording?.wait()
        }
        runWorkers(count: configuration.schedule.concurrency) { self.work(pass) }
        // A store whose probe closed its breaker once the other workers had run out of work:
        // its due orders are claimed now, not a pass later.
        let reopened = pass.takeReopened()
        for store in reopened.sorted(by: { $0.rawValue < $1.rawValue }) {
            log.info("\(store.logName).breaker_closed", ["store": store.rawValue])
        }
        if !reopened.isEmpty { runWorkers(count: configuration.schedule.concurrency) { self.work(pass) } }
    }

    /// A stop (the breaker, a fault, shutdown) may leave claims of a batch unworked: put back
    /// as they were. One that cannot be is rescued, as a leftover of this process, next pass.
    func releaseUnworkedClaims(_ pass: Pass) {
        for order in pass.unworkedClaims() {
            do {
                try ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
            } catch {
                log.warning("order.release_failed", ["order": order.orderId, "error": "\(error)",
                                                     "why": "rescued at the next pass"])
            }
        }
    }

    /// As many recorders as verification workers: each writes one store's answer at a time, and
    /// its write waits for others to share the commit (`CommitPace`). A confirmed purchase's
    /// place in the delivery queue was kept by its worker, so a recorder never waits for room.
    private func startRecorders(_ pass: Pass) -> DispatchGroup {
        let group = DispatchGroup()
        for _ in 0..<configuration.schedule.concurrency {
            group.enter()
            Thread {
                CommitPace.$deferrable.withValue(true) { self.recordAnswers(pass) }
                group.leave()
            }.start()
        }
        return group
    }

    private func recordAnswers(_ pass: Pass) {
        while let answer = pass.answers.take() {
            var reserved = answer.deliveryReserved
            defer { if reserved { pass.deliveries.cancelReservation() } }
            do {
                do {
                    try record(answer.verification, of: answer.order, pass: pass) { verified in
                        if reserved {
                            reserved = false
                            pass.deliveries.put(reserved: verified)
                        } else {
                            pass.deliveries.put(verified)
                        }
                    }
                } catch let error as LedgerError {
                    // A row a backend broke fails its own writes; it must not stop every other order.
                    guard let violation = error.constraintViolation else { throw error }
                    try setAside(answer.order, violation: violation, pass: pass)
                }
            } catch {
                pass.fail(error)
            }
        }
    }

    private func runWorkers(count: Int, _ body: @escaping @Sendable () -> Void) {
        guard count > 1 else { return body() }
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            let thread = Thread {
                body()
                group.leave()
            }
            thread.start()
        }
        group.wait()
    }

    private func work(_ pass: Pass) {
        // Each worker has a home store: a slow store holds its own workers, never another's orders.
        let home = pass.enlist(workers: configuration.schedule.concurrency, homes: Set(stores.keys))
        do {
            while true {
                // Before the claim: its lease runs until at least then plus its length.
                let claimedAt = ledger.time.unixSeconds
                guard let next = try nextOrder(pass, home: home) else { break }
                do {
                    if next.state == .delivering {
                        pass.deliveries.put(DeliveryQueue.Leased(next, leasedAt: claimedAt))
                    } else if !ledger.sharesCommits {
                        // Waits while the delivery queue is full: verification never runs ahead of the hooks.
                        try verify(next, pass: pass) { verified in pass.deliveries.put(verified) }
                    } else {
                        // The answer is written down without this worker, which goes back to the
                        // store once a confirmed purchase has its place among the deliveries (waits
                        // while the delivery queue is full: verification never runs ahead of the
                        // hooks). A confirmed purchase's write is handed to the ledger's group
                        // commit; any other answer to a recorder.
                        let verification = try ask(next, pass: pass)
                        var reserved = false
                        if case .verified = verification.outcome {
                            // Its verification lease is renewed while it waits (hooks may be slow).
                            reserved = pass.deliveries.tryReserve()
                                || withLeasesRenewed([next], state: .verifying, leaseSeconds: verifyLeaseSeconds) {
                                    pass.deliveries.reserve()
                                }
                        }
                        if reserved, verification.learned == nil, case let .verified(match) = verification.outcome {
                            handOver(next, match: match, verification: verification, pass: pass)
                        } else {
                            pass.answers.put(AnswerQueue.Answer(order: next, verification: verification,
                                                                deliveryReserved: reserved))
                        }
                    }
                } catch let error as LedgerError {
                    // A row a backend broke fails its own writes; it must not stop every other order.
                    guard let violation = error.constraintViolation else { throw error }
                    try setAside(next, violation: violation, pass: pass)
                }
            }
        } catch {
            pass.fail(error)
        }
    }

    private func nextOrder(_ pass: Pass, home: Store?) throws(LedgerError) -> Order? {
        while true {
            switch pass.take(home: home) {
            case .stop: return nil
            case let .redeliver(id):
                // Leased only now, when work on it starts: a queue of rescued deliveries never expires while it waits.
                guard let order = try ledger.claimRedelivery(orderId: id, owner: owner,
                                                             leaseSeconds: deliveryLeaseSeconds) else {
                    log.info("order.rescue_skipped", ["order": id, "why": "another process took it or it moved on"])
                    continue
                }
                return order
            case let .named(id):
                guard let (order, claimed) = try ledger.claim(orderId: id, owner: owner,
                                                              leaseSeconds: verifyLeaseSeconds) else {
                    pass.skip(id, why: "no such order", exists: false)
                    continue
                }
                guard claimed else {
                    pass.skip(id, why: "it is \(order.state.rawValue)", exists: true)
                    continue
                }
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            case let .claimed(order):
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            case let .due(stores):
                // One transaction claims a batch; the next workers take the rest (`Pass.take`).
                let batch = try ledger.claimDue(owner: owner, leaseSeconds: verifyLeaseSeconds, limit: claimBatchSize,
                                                stores: stores)
                guard let order = batch.first else {
                    pass.noMoreDue(stores)
                    continue
                }
                pass.keepClaimed(Array(batch.dropFirst()))
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            case let .probe(store):
                let probe = try ledger.claimDue(owner: owner, leaseSeconds: verifyLeaseSeconds, limit: 1,
                                                stores: [store])
                guard let order = probe.first else {
                    pass.noMoreDue([store])
                    continue
                }
                if let kept = try keepUnlessStopped(order, pass) { return kept }
            }
        }
    }

    /// The order's store (its breaker opened, its credentials failed, its rate limit was met) or
    /// the whole pass may have stopped while we were claiming: put the claim back untouched
    /// (nil; a paced store's orders keep their place, unattempted); the caller goes on with the
    /// next order, as another store's may still be worked on. A delivery is never held back.
    private func keepUnlessStopped(_ order: Order, _ pass: Pass) throws(LedgerError) -> Order? {
        let paced = order.state != .delivering && pass.isPaced(order.store)
        guard pass.isStopped(order.store) || paced else { return order }
        try ledger.release(orderId: order.orderId, owner: owner, fence: order.fencingToken)
        return nil
    }
}
