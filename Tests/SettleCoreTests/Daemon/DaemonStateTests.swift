import XCTest
@testable import SettleApp

/// The daemon's lifecycle as a value, without sockets, ledgers or signals.
final class DaemonStateTests: XCTestCase {
    /// Stands in for what the daemon holds while it runs.
    struct Held: Equatable {
        var configuration: String
        var reconciler: Int
        let ledger: String
    }

    let held = Held(configuration: "a", reconciler: 1, ledger: "ledger")

    func testStarting_whenStarted_thenRunningHoldsWhatWasOpenedAndIsNotStopping() {
        var state = DaemonState<Held>.starting
        XCTAssertNil(state.running)
        XCTAssertFalse(state.isStopping)
        XCTAssertTrue(state.started(held))
        XCTAssertEqual(state.running, held)
        XCTAssertFalse(state.isStopping)
        XCTAssertFalse(state.started(Held(configuration: "b", reconciler: 2, ledger: "other")), "a daemon starts once")
        XCTAssertEqual(state.running, held)
    }

    func testRunning_whenReloaded_thenConfigurationAndReconcilerAreReplacedAndTheLedgerStays() {
        var state = DaemonState<Held>.starting
        _ = state.started(held)
        XCTAssertTrue(state.reload { $0.configuration = "b"; $0.reconciler = 2 })
        XCTAssertEqual(state.running, Held(configuration: "b", reconciler: 2, ledger: "ledger"))
        XCTAssertFalse(state.isStopping)
    }

    func testRunning_whenStopBegins_thenStoppingKeepsWhatIsHeldAndASecondStopIsRefused() {
        var state = DaemonState<Held>.starting
        _ = state.started(held)
        XCTAssertEqual(state.beginStopping(), held)
        XCTAssertTrue(state.isStopping)
        XCTAssertEqual(state.running, held, "the last pass still finishes with what it holds")
        XCTAssertNil(state.beginStopping(), "SIGTERM twice, or SIGTERM after a replaced ledger, stops once")
        XCTAssertFalse(state.reload { $0.configuration = "late" }, "a reload during the stop changes nothing")
        XCTAssertEqual(state.running?.configuration, "a")
    }

    func testStopping_whenFinishedTwice_thenWhatWasHeldIsHandedOverOnceAndStoppedHoldsNothing() {
        var state = DaemonState<Held>.starting
        _ = state.started(held)
        XCTAssertNil(state.finish(), "no end without a stop first")
        _ = state.beginStopping()
        XCTAssertEqual(state.finish(), held, "the clean end (or the grace timer) closes the ledger")
        XCTAssertNil(state.finish(), "whichever of the two comes second closes nothing")
        XCTAssertNil(state.running)
        XCTAssertTrue(state.isStopping)
        XCTAssertNil(state.beginStopping())
        XCTAssertFalse(state.started(held), "a stopped daemon does not run again")
        XCTAssertFalse(state.reload { _ in })
    }

    func testStarting_whenAStopOrReloadArrivesBeforeTheStart_thenNothingChanges() {
        var state = DaemonState<Held>.starting
        XCTAssertNil(state.beginStopping())
        XCTAssertFalse(state.reload { _ in })
        XCTAssertNil(state.finish())
        XCTAssertFalse(state.isStopping)
        XCTAssertTrue(state.started(held))
    }
}
