import Foundation
import Synchronization
import SettleBase
import SettleLedger

/// What notifications leave to do (the core's revokes through the operator's hook, and each
/// store's own: answers to Apple's refund requests), run with a pass so that no backlog holds them back: once before the pass
/// claims anything, every `interval` seconds while its workers drain, and once at its end. An
/// answer has Apple's 12-hour deadline and a backlog drained at a store's rate limit can take
/// longer than that; a pass that ran them only at its end would answer nothing until the
/// backlog was gone. Each run claims what it does in the ledger, so runs never do a job twice.
final class PassObligations: Sendable {
    private let revoker: Revoker
    private let stores: [any StoreAdapter]
    private let log: Log
    private let totals = Mutex((revoked: 0, answered: 0))
    private let finished = DispatchSemaphore(value: 0)
    private let alongside = DispatchGroup()

    init(revoker: Revoker, stores: [any StoreAdapter], log: Log) {
        self.revoker = revoker
        self.stores = stores
        self.log = log
    }

    /// Revoked and answered so far.
    var done: (revoked: Int, answered: Int) { totals.withLock { $0 } }

    /// Runs every due revoke and answer now. Before the pass ends (`final` false), an answer
    /// about a purchase still being settled stays due, so the run after the deliveries sees it.
    func run(final: Bool = false) throws(LedgerError) {
        let revoked = try revoker.run()
        var answered = 0
        for store in stores { answered += try store.obligations(final: final) }
        totals.withLock { [answered] in $0.revoked += revoked; $0.answered += answered }
    }

    /// Runs them every `interval` seconds on a thread of their own until `stop()`, unless
    /// `shouldStop` says the process is stopping, after `first` (what else a long pass
    /// refreshes as it goes). A failure is logged and left to the run at the pass's end, which
    /// throws it.
    func start(every interval: Double, shouldStop: @escaping @Sendable () -> Bool,
               first: @escaping @Sendable () throws(LedgerError) -> Void = {}) {
        alongside.enter()
        Thread { [self] in
            defer { alongside.leave() }
            while finished.wait(timeout: .now() + interval) == .timedOut, !shouldStop() {
                do {
                    try first()
                    try run()
                } catch {
                    log.warning("obligations.failed", ["error": "\(error)", "why": "tried again at the end of the pass"])
                }
            }
        }.start()
    }

    /// Ends the runs alongside the pass and waits for one under way.
    func stop() {
        finished.signal()
        alongside.wait()
    }
}
