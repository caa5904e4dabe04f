import SettleBase
import SettleModel

/// What every ledger is, whichever role a caller uses it in.
package protocol LedgerBase: AnyObject, Sendable {
    var time: any TimeSource { get }
    /// Where the ledger is, for logs and status (a path, or a URL without its password).
    var location: String { get }
    /// Whether several `settle run` processes may share this ledger (PostgreSQL), or one
    /// holds it under the file lock (SQLite).
    var isShared: Bool { get }
    /// Whether transitions submitted at about the same time share one commit (SQLite's group
    /// commit, one fsync for all; see `CommitPace`): then a pass hands the stores' answers to
    /// recorders whose writes wait for one another. PostgreSQL commits each transition on its
    /// own connection, where more writers at once only contend: answers are recorded inline.
    var sharesCommits: Bool { get }

    func schemaVersion() throws(LedgerError) -> Int
    func close() throws(LedgerError)
}

/// Orders and their transitions: what backends enqueue and what the reconciler claims, verifies
/// and delivers.
///
/// Every transition names the claim it acts on: the owner (host, pid, start) and, on
/// PostgreSQL, the claim's fencing token (`Order.fencingToken`), a counter bumped at each
/// claim. A transition whose claim is no longer current changes nothing and answers so
/// (`false`, `nil` or `.leaseLost`). SQLite's claims are taken back only by this process's
/// own rescue before a pass, so the owner alone identifies them there and `fence` is unused
/// (`LedgerDialect.fence`).
package protocol OrderLedger: LedgerBase {
    func enqueue(_ new: NewOrder) throws(LedgerError) -> EnqueueResult
    func receipt(sha256: String) throws(LedgerError) -> String?

    // Claims
    /// Claims up to `limit` due orders of `stores` (nil: every store) in one transaction, in
    /// claim order: Google Play orders near Google's refund deadline first, then by due time.
    /// Empty when none is due. A pass names the stores whose breakers let it claim.
    func claimDue(owner: LeaseOwner, leaseSeconds: Int64, limit: Int, stores: Set<Store>?) throws(LedgerError) -> [Order]
    func claim(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> (order: Order, claimed: Bool)?
    func rescue(owner: LeaseOwner) throws(LedgerError) -> RescueResult
    func claimRedelivery(orderId: String, owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order?
    /// Pushes the lease of a claim still held (same owner, and on PostgreSQL the same fencing
    /// token) out by `leaseSeconds`, in one write; false when the claim is gone. Used while a
    /// verification or a hook runs, and as the fenced take at the moment a hook starts.
    func renewLease(orderId: String, owner: LeaseOwner, fence: Int64?, state: OrderState, leaseSeconds: Int64) throws(LedgerError) -> Bool
    func release(orderId: String, owner: LeaseOwner, fence: Int64?) throws(LedgerError)

    // Transitions of a claimed order
    func recordVerified(orderId: String, owner: LeaseOwner, fence: Int64?, match: Match, deliveryLeaseSeconds: Int64,
                        history: HistoryEntry) throws(LedgerError) -> VerifiedResult
    /// `recordVerified`, for a caller that goes on without waiting for the commit (a pass's
    /// verification worker goes back to the store): `done` gets the result once it is durable,
    /// or the error, as `TransactionalLedger.transition(_:then:)` says.
    func recordVerified(_ answer: VerifiedAnswer, owner: LeaseOwner, deliveryLeaseSeconds: Int64,
                        then done: @escaping (Result<VerifiedResult, LedgerError>) -> Void)
    func recordGrantedOutside(orderId: String, owner: LeaseOwner, fence: Int64?, history: HistoryEntry) throws(LedgerError) -> GrantedOutsideResult
    @discardableResult
    func recordRejected(orderId: String, owner: LeaseOwner, fence: Int64?, reason: String, detail: String,
                        environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool
    @discardableResult
    func recordNeedsAttention(orderId: String, owner: LeaseOwner, fence: Int64?, reason: AttentionReason, detail: String,
                              environment: String?, history: HistoryEntry) throws(LedgerError) -> Bool
    @discardableResult
    func recordFailure(orderId: String, owner: LeaseOwner, fence: Int64?, from state: OrderState, error: String,
                       countsAttempt: Bool, permanent: Bool, nextAttemptAt: Int64, maxAttempts: Int,
                       exhaustedReason: AttentionReason, environment: String?, history: HistoryEntry) throws(LedgerError) -> OrderState?
    @discardableResult
    func markFinished(orderId: String, owner: LeaseOwner, fence: Int64?, history: HistoryEntry) throws(LedgerError) -> Bool
    /// Several orders a hook confirmed at once (a batch hook's answer), each as `markFinished`
    /// (true: finished; false: the claim is gone), committed together where the engine can.
    func markFinished(_ orders: [FinishedDelivery], owner: LeaseOwner) -> [Result<Bool, LedgerError>]
    /// A Google Play order's hook said delivered and Google is not told yet (see `Ledger.recordDelivered`).
    @discardableResult
    func recordDelivered(orderId: String, owner: LeaseOwner, fence: Int64?, error: String?, history: HistoryEntry) throws(LedgerError) -> Bool
    /// The store refused to hear a delivered order is done: backed off, then `needs_attention`.
    func recordStoreFinishRefused(orderId: String, owner: LeaseOwner, fence: Int64?, error: String, nextAttemptAt: Int64,
                                  maxAttempts: Int, history: HistoryEntry) throws(LedgerError) -> OrderState?

    // Rows settle cannot work on
    func quarantineMalformedRows() throws(LedgerError) -> [String]
    func quarantine(orderId: String, detail: String) throws(LedgerError)
}

/// Grants: who holds a purchase, and the ones a backend made itself (`grant-recorded`).
package protocol GrantLedger: LedgerBase {
    func recordOutsideGrant(transactionId: String, grantKey: String, note: String?) throws(LedgerError) -> OutsideGrantResult
    func grantHolder(transactionId: String) throws(LedgerError) -> String?
    func grantHolder(of purchase: VerifiedPurchase) throws(LedgerError) -> GrantHolder?
}

/// What support does and reads: `retry`, `resolve`, `assign`, `status`, `reconcile --dry-run`,
/// and housekeeping.
package protocol SupportLedger: LedgerBase {
    /// `by`: who asked, for the history (nil: nobody named).
    @discardableResult
    func retry(orderIds: [String], note: String?, proof: ReplacementProof?, by: Operator?) throws(LedgerError) -> [RetriedOrder]
    @discardableResult
    func resolve(orderIds: [String], as resolution: Resolution, note: String, transaction: String?,
                 by: Operator?) throws(LedgerError) -> [(String, OrderState)]
    /// `settle assign`: an order without a user (`unclaimed_purchase`) gets its buyer and is due now.
    func assign(orderId: String, userId: String, note: String?, accountToken: String?, by: Operator?) throws(LedgerError)

    func summary(_ filter: OrderFilter) throws(LedgerError) -> LedgerSummary
    /// The orders closest to their store's refund deadline, soonest first (at most `limit`).
    func refundDeadlines(limit: Int) throws(LedgerError) -> [RefundDeadline]
    func orderRecord(_ orderId: String) throws(LedgerError) -> (order: Order, history: [HistoryEntry])?
    func dueOrders(limit: Int) throws(LedgerError) -> [Order]
    @discardableResult
    func pruneHistory(olderThanDays days: Int) throws(LedgerError) -> Int
}

/// Work done once for all daemons (each store's breaker), and the daemons themselves.
package protocol DaemonRegistry: LedgerBase {
    /// Every store's breaker, closed where none was saved.
    func breakers() throws(LedgerError) -> [Store: StoreBreaker]
    /// The breakers as a pass starts: on a shared ledger, when a store's breaker is due for a
    /// probe, only one daemon gets it due (and probes); the others see it wait one more cooldown.
    func breakersForPass() throws(LedgerError) -> [Store: StoreBreaker]
    func saveBreaker(_ breaker: StoreBreaker, of store: Store) throws(LedgerError)
    func recordDaemonStarted(_ owner: LeaseOwner) throws(LedgerError)
    func recordDaemonPass(_ owner: LeaseOwner, summary: String) throws(LedgerError)
    func recordDaemonStopped(_ owner: LeaseOwner) throws(LedgerError)
    /// A reload's outcome: its error when it failed, nil when it worked.
    func recordDaemonReload(_ owner: LeaseOwner, error: String?) throws(LedgerError)
    /// The most recently started daemon (SQLite keeps only that one).
    func daemonRecord() throws(LedgerError) -> DaemonRecord?
    /// The daemons whose heartbeat is recent, newest first (`settle status`).
    func liveDaemons() throws(LedgerError) -> [DaemonRecord]
    /// How many hosts share the stores' rate limits with `owner` (itself included): each takes
    /// that fraction of every pacer bucket. SQLite is one host; PostgreSQL counts the live daemons.
    func pacerHosts(besides owner: LeaseOwner) throws(LedgerError) -> Int
    /// Saves this host's pacer buckets (at most once a pass).
    func savePacerBuckets(host: String, hosts: Int, _ snapshots: [PacerSnapshot]) throws(LedgerError)
    /// Every host's buckets saved since `since`.
    func pacerBuckets(since: Int64) throws(LedgerError) -> [PacerBucketRecord]
}

/// A store's confirmation of a claimed order's purchase, to be recorded (`recordVerified`).
package struct VerifiedAnswer: Sendable {
    package var orderId: String
    package var fence: Int64?
    package var match: Match
    package var history: HistoryEntry

    package init(orderId: String, fence: Int64?, match: Match, history: HistoryEntry) {
        (self.orderId, self.fence, self.match, self.history) = (orderId, fence, match, history)
    }
}

/// One order of `markFinished(_:owner:)`: the claim it was delivered under and its history entry.
package struct FinishedDelivery: Sendable {
    package var orderId: String
    package var fence: Int64?
    package var history: HistoryEntry

    package init(orderId: String, fence: Int64?, history: HistoryEntry) {
        self.orderId = orderId
        self.fence = fence
        self.history = history
    }
}

/// The ledger as the rest of settle uses it, every role at once: the one place where orders
/// change state, whichever database holds it. `SQLiteLedger` keeps it in SQLite on one host;
/// `PostgresLedger` in PostgreSQL, shared by any number of `settle run` processes on any
/// number of hosts. A caller that needs one role takes that protocol.
package protocol LedgerStore: OrderLedger, GrantLedger, SupportLedger, DaemonRegistry {}

extension OrderLedger {
    /// A failure whose exhausted attempts end `attempts_exhausted` (the usual case).
    @discardableResult
    package func recordFailure(orderId: String, owner: LeaseOwner, fence: Int64?, from state: OrderState, error: String,
                               countsAttempt: Bool, permanent: Bool, nextAttemptAt: Int64, maxAttempts: Int,
                               environment: String?, history: HistoryEntry) throws(LedgerError) -> OrderState? {
        try recordFailure(orderId: orderId, owner: owner, fence: fence, from: state, error: error, countsAttempt: countsAttempt,
                          permanent: permanent, nextAttemptAt: nextAttemptAt, maxAttempts: maxAttempts,
                          exhaustedReason: .attemptsExhausted, environment: environment, history: history)
    }
}

extension SupportLedger {
    @discardableResult
    package func retry(orderIds: [String], note: String?, by person: Operator? = nil) throws(LedgerError) -> [RetriedOrder] {
        try retry(orderIds: orderIds, note: note, proof: nil, by: person)
    }

    @discardableResult
    package func resolve(orderIds: [String], as resolution: Resolution, note: String,
                        by person: Operator? = nil) throws(LedgerError) -> [(String, OrderState)] {
        try resolve(orderIds: orderIds, as: resolution, note: note, transaction: nil, by: person)
    }
}

extension SQLiteLedger: LedgerStore {
    package var location: String { path }
    package var isShared: Bool { false }
    package var sharesCommits: Bool { true }
}

extension LedgerError {
    /// The database's words when a write broke a constraint (a row a backend wrote badly), else nil.
    package var constraintViolation: String? {
        switch self {
        case let .io(sqlite) where sqlite.isConstraintViolation: return sqlite.message
        case let .postgres(postgres) where postgres.isConstraintViolation: return postgres.message
        default: return nil
        }
    }
}

extension OrderLedger {
    /// Claims the next due order, or nil when none is due.
    package func claimNextDue(owner: LeaseOwner, leaseSeconds: Int64) throws(LedgerError) -> Order? {
        try claimDue(owner: owner, leaseSeconds: leaseSeconds, limit: 1).first
    }

    /// Claims up to `limit` due orders of every store.
    package func claimDue(owner: LeaseOwner, leaseSeconds: Int64, limit: Int) throws(LedgerError) -> [Order] {
        try claimDue(owner: owner, leaseSeconds: leaseSeconds, limit: limit, stores: nil)
    }
}

extension Order {
    /// Claim order among urgent Google Play orders: nearest refund deadline first (`claimDue`).
    package static func beforeInRefundDeadlineOrder(_ a: Order, _ b: Order) -> Bool {
        let (x, y) = (a.verified?.purchaseDateMs.map { $0 / 1000 } ?? a.createdAt, b.verified?.purchaseDateMs.map { $0 / 1000 } ?? b.createdAt)
        return x != y ? x < y : a.orderId < b.orderId
    }

    /// Claim order among due orders: due first, then by order id (`claimDue`).
    package static func beforeInDueOrder(_ a: Order, _ b: Order) -> Bool {
        a.nextAttemptAt != b.nextAttemptAt ? a.nextAttemptAt < b.nextAttemptAt : a.orderId < b.orderId
    }
}

extension SupportLedger {
    /// `settle assign` without an account token owed to Apple.
    package func assign(orderId: String, userId: String, note: String?, by person: Operator? = nil) throws(LedgerError) {
        try assign(orderId: orderId, userId: userId, note: note, accountToken: nil, by: person)
    }
}
