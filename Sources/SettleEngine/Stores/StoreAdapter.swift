import SettleBase
import SettleModel
import SettleLedger

/// One store as the engine sees it: the pass, the daemon and status talk to every configured
/// store through this and never ask which store it is. Each store's adapter lives in its own
/// folder beside this file (`AppStore/`, `GooglePlay/`), built from its configuration section
/// where adapters are made (`Reconciler.configured`); a third store adds a folder and a line there.
///
/// What is the store's by nature, whatever the configuration, is `Store`'s own (its names, and
/// whether it must hear of a delivery before an order is finished: `mustBeToldOfDelivery`).
package protocol StoreAdapter: Sendable {
    var store: Store { get }

    /// Re-verifies one of this store's orders (its proof: an App Store receipt or signed
    /// transaction, a Google purchase token). The model's rules judge what the store said.
    func verify(_ order: Order) throws -> Verification

    /// What tells the store an order's goods were granted (Google: acknowledge or consume); nil
    /// when it needs nothing. Where `store.mustBeToldOfDelivery`, an order is finished only once
    /// this says so.
    var finisher: (any StoreFinisher)? { get }

    /// What the store sent on its own, stored by its listener route, turned into orders before a
    /// pass claims (Google's real-time notifications), so that pass delivers them. Runs only while
    /// the store's breaker is closed or lets a probe through (this work may be the probe); stops
    /// at the first store-wide failure and once `work` is spent, leaving the rest for the next pass.
    func beforeClaims(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome

    /// The store's own work after a pass's deliveries (Google's voided purchases poll, when due),
    /// under the same rules as `beforeClaims`.
    func afterPass(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome

    /// Its paths on the notifications listener, each answering one request; `needsPass` asks
    /// for a pass now (a purchase to deliver, a refund to take back).
    var listenerRoutes: [String: ListenerRoute] { get }

    /// Work its notifications leave that runs with the core's revokes, before, during and after
    /// a pass's deliveries (Apple's answers to refund requests). Returns how many were done.
    /// `final`: the run after the deliveries, which may answer what they delivered.
    func obligations(final: Bool) throws(LedgerError) -> Int

    /// Timers of its own the daemon runs between passes (Apple's history catch-up).
    var tasks: [StoreTask] { get }
}

/// What a store that needs none of it writes nothing for: a store module writes what differs.
extension StoreAdapter {
    package var finisher: (any StoreFinisher)? { nil }
    package func beforeClaims(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome { .idle }
    package func afterPass(_ work: SideWork) throws(LedgerError) -> SideWorkOutcome { .idle }
    package var listenerRoutes: [String: ListenerRoute] { [:] }
    package func obligations(final: Bool) throws(LedgerError) -> Int { 0 }
    package var tasks: [StoreTask] { [] }
}

/// One path of the notifications listener.
package typealias ListenerRoute = @Sendable (HTTPServerRequest) -> (response: HTTPServerResponse, needsPass: Bool)

extension HTTPServerResponse {
    /// What a listener route answers a store: `{"result": text}`.
    package static func listenerReply(_ status: Int, _ text: String) -> HTTPServerResponse {
        .json(status, JSONValue.object([("result", .string(text))]).data)
    }
}

/// Sends each order to its store's adapter; an order of a store that is not configured waits,
/// using no attempt, until it is (that is not the order's fault).
package struct StoreRouter: OrderVerifier {
    package var adapters: [Store: any StoreAdapter]

    package init(adapters: [Store: any StoreAdapter]) {
        self.adapters = adapters
    }

    package func verify(_ order: Order) throws -> Verification {
        guard let adapter = adapters[order.store] else {
            var waiting = Verification(outcome: .retry("a \(order.store.displayName) order, and \(order.store.unconfiguredHint)"))
            waiting.keepsAttempt = true
            return waiting
        }
        return try adapter.verify(order)
    }
}
