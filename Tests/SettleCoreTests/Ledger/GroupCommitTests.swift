import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger

/// Transitions committed together stay independent: each sees the ones before it, a failing one
/// is rolled back alone, and every caller learns its result only after the commit.
final class GroupCommitTests: XCTestCase {
    /// A transition that holds `ledger`'s commit open until the returned closure is called (which
    /// returns once that transition is done): transitions submitted meanwhile queue behind it.
    /// Returns once the held commit has begun (within 10 s).
    func holdCommit(_ ledger: SQLiteLedger) -> () -> Void {
        let before = ledger.groupCommit.batches
        let gate = DispatchSemaphore(value: 0)
        let held = DispatchGroup()
        held.enter()
        Thread { _ = try? ledger.transition { gate.wait() }; held.leave() }.start()
        let deadline = Date().addingTimeInterval(10)
        while ledger.groupCommit.batches == before && Date() < deadline { usleep(1000) }
        return {
            gate.signal()
            held.wait()
        }
    }

    /// Orders o-0 … o-(count - 1) of one buyer, pending.
    func enqueueOrders(_ count: Int, _ world: TestWorld, _ ledger: SQLiteLedger) throws {
        for i in 0..<count { _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: "\(i)")) }
    }

    func testConcurrentTransitions_oneFailing_theOthersAllCommit_andTheFailingOneLeavesNoTrace() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        try enqueueOrders(64, world, ledger)
        let failures = LineCollector()
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            do {
                try ledger.transition {
                    try ledger.database.query("UPDATE orders SET last_error = 'touched' WHERE order_id = ?", [.text("o-\(i)")])
                    if i == 13 { throw LedgerError.invalid("refused on purpose") }
                }
            } catch {
                failures.append("\(i): \(error)")
            }
        }
        XCTAssertEqual(failures.lines, ["13: refused on purpose"])
        let reader = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        let touched = try reader.query("SELECT order_id FROM orders WHERE last_error = 'touched'").compactMap { $0.string("order_id") }
        XCTAssertEqual(touched.count, 63)
        XCTAssertFalse(touched.contains("o-13"))
    }

    func testSharedTransitions_submittedWhileACommitRuns_onSQLite_allJoinTheNextGroupCommit() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        let owner = LeaseOwner.current
        for i in 0..<8 {
            _ = try ledger.enqueue(NewOrder(orderId: "o-\(i)", userId: "u", productId: world.coins, transactionId: "\(i)"))
            XCTAssertNotNil(try ledger.claimNextDue(owner: owner, leaseSeconds: 60))
        }
        let before = ledger.groupCommit.batches
        // A transition that holds the commit open: the ones submitted meanwhile must queue behind
        // it as group-commit items, not as transactions of their own.
        let gate = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        // Threads of their own: each blocks until its commit, which a thread pool would ration.
        func spawn(_ body: @escaping @Sendable () -> Void) {
            group.enter()
            Thread { body(); group.leave() }.start()
        }
        spawn { try? ledger.transition { gate.wait() } }
        let deadline = Date().addingTimeInterval(10)
        while ledger.groupCommit.batches == before && Date() < deadline { usleep(1000) }
        let outcomes = LineCollector()
        for i in 0..<8 {
            spawn {
                let state = try? ledger.recordFailure(orderId: "o-\(i)", owner: owner, fence: nil, from: .verifying, error: "timeout",
                                                      countsAttempt: true, permanent: false, nextAttemptAt: 0, maxAttempts: 5,
                                                      environment: nil, history: HistoryEntry(at: 0, kind: .verification, outcome: "failed"))
                outcomes.append("o-\(i): \(state?.rawValue ?? "nil")")
            }
        }
        while ledger.groupCommit.waiting < 8 && Date() < deadline { usleep(1000) }
        XCTAssertEqual(ledger.groupCommit.waiting, 8, "each transition is submitted to the group commit")
        gate.signal()
        group.wait()
        XCTAssertEqual(outcomes.lines.sorted(), (0..<8).map { "o-\($0): pending" })
        XCTAssertEqual(ledger.groupCommit.batches - before, 2, "the held commit, then the eight transitions in one")
    }

    /// A transition's savepoint journal keeps the original of every page it changes: one that
    /// rewrites megabytes of pages and then fails is still rolled back alone, and the transitions
    /// around it in the same commit are kept.
    func testATransitionRewritingMegabytesOfPages_failing_isRolledBackAlone_andItsBatchCommits() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        try enqueueOrders(2, world, ledger)
        let pageSize = try XCTUnwrap(ledger.database.query("PRAGMA page_size").first?.int("page_size"))
        let pagesBefore = try XCTUnwrap(ledger.database.query("PRAGMA page_count").first?.int("page_count"))
        try ledger.database.execute("CREATE TABLE scratch (x TEXT NOT NULL)")
        try ledger.database.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
            INSERT INTO scratch SELECT lower(hex(randomblob(512))) FROM n
            """)
        let pagesAfter = try XCTUnwrap(ledger.database.query("PRAGMA page_count").first?.int("page_count"))
        XCTAssertGreaterThan((pagesAfter - pagesBefore) * pageSize, 2 << 20, "the transition below journals megabytes")
        let bodies: [() throws -> String] = [
            { _ = try ledger.database.query("UPDATE orders SET last_error = 'before' WHERE order_id = 'o-0'"); return "before" },
            {
                _ = try ledger.database.query("UPDATE scratch SET x = upper(x)")
                throw LedgerError.invalid("refused after rewriting every page")
            },
            { _ = try ledger.database.query("UPDATE orders SET last_error = 'after' WHERE order_id = 'o-1'"); return "after" },
        ]
        let outcomes = ledger.transitions(bodies)
        XCTAssertEqual(outcomes.map { outcome in
            switch outcome {
            case let .success(value): value
            case let .failure(error): "\(error)"
            }
        }, ["before", "refused after rewriting every page", "after"])
        let reader = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        XCTAssertEqual(try reader.query("SELECT count(*) AS n FROM scratch WHERE x <> lower(x)").first?.int("n"), 0,
                       "the failed transition left no page changed")
        XCTAssertEqual(try reader.query("SELECT count(*) AS n FROM scratch").first?.int("n"), 2000)
        let errors = try reader.query("SELECT order_id, last_error FROM orders ORDER BY order_id")
            .map { "\($0.string("order_id") ?? "?"): \($0.string("last_error") ?? "nil")" }
        XCTAssertEqual(errors, ["o-0: before", "o-1: after"])
    }

    /// A batch runs bare first (no savepoints to journal pages into): each transition once when
    /// none fails. When one fails, nothing of that run is kept and the batch runs again with each
    /// transition in its own savepoint; what is committed is the second run's, once.
    func testABatch_runsEachTransitionOnce_andOnlyAfterAFailure_runsAgainWithNothingOfTheFirstRunKept() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        try enqueueOrders(3, world, ledger)
        final class Runs: @unchecked Sendable { var counts = [0, 0, 0] }
        func bodies(failing: Int?) -> (Runs, [() throws -> Int]) {
            let runs = Runs()
            return (runs, (0..<3).map { i in {
                runs.counts[i] += 1
                try ledger.database.query("UPDATE orders SET attempts = attempts + 1 WHERE order_id = ?", [.text("o-\(i)")])
                if i == failing { throw LedgerError.invalid("refused on purpose") }
                return i
            } })
        }
        func attempts() throws -> [Int64] {
            let reader = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
            return try reader.query("SELECT attempts FROM orders ORDER BY order_id").map { $0.int("attempts") ?? -1 }
        }
        func described(_ outcomes: [Result<Int, LedgerError>]) -> [String] {
            outcomes.map { outcome in
                switch outcome {
                case let .success(value): "\(value)"
                case let .failure(error): "\(error)"
                }
            }
        }

        let (cleanRuns, clean) = bodies(failing: nil)
        XCTAssertEqual(described(ledger.transitions(clean)), ["0", "1", "2"])
        XCTAssertEqual(cleanRuns.counts, [1, 1, 1], "no transition failed: no second run")
        XCTAssertEqual(try attempts(), [1, 1, 1])

        let (failedRuns, failing) = bodies(failing: 1)
        XCTAssertEqual(described(ledger.transitions(failing)), ["0", "refused on purpose", "2"])
        XCTAssertEqual(failedRuns.counts, [2, 2, 1], "the first run stopped at the failure; the second ran all three")
        XCTAssertEqual(try attempts(), [2, 1, 2], "o-0's first run was rolled back, o-1 is rolled back alone")

        let (aloneRuns, alone) = bodies(failing: 0)
        XCTAssertEqual(described(ledger.transitions([alone[0]])), ["refused on purpose"])
        XCTAssertEqual(aloneRuns.counts, [1, 0, 0], "a batch of one that failed has nothing to run again")
        XCTAssertEqual(try attempts(), [2, 1, 2])
    }

    func testSeveralTransitionsOfOneCaller_joinOneCommit_evenWhileAnotherRuns_andEachFailsAlone() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        try enqueueOrders(8, world, ledger)
        let before = ledger.groupCommit.batches
        let release = holdCommit(ledger)
        let deadline = Date().addingTimeInterval(10)
        let results = LineCollector()
        let done = DispatchGroup()
        done.enter()
        Thread {
            let outcomes = ledger.transitions((0..<8).map { i in {
                try ledger.database.query("UPDATE orders SET last_error = 'touched' WHERE order_id = ?", [.text("o-\(i)")])
                if i == 5 { throw LedgerError.invalid("refused on purpose") }
                return i
            } })
            for outcome in outcomes {
                switch outcome {
                case let .success(i): results.append("\(i)")
                case let .failure(error): results.append("\(error)")
                }
            }
            done.leave()
        }.start()
        while ledger.groupCommit.waiting < 8 && Date() < deadline { usleep(1000) }
        XCTAssertEqual(ledger.groupCommit.waiting, 8, "all eight queued at once behind the held commit")
        release()
        done.wait()
        XCTAssertEqual(results.lines, ["0", "1", "2", "3", "4", "refused on purpose", "6", "7"])
        XCTAssertEqual(ledger.groupCommit.batches - before, 2, "the held commit, then the caller's eight in one")
        let reader = try SQLiteDatabase(path: world.ledgerPath, mode: .readOnly)
        let touched = try reader.query("SELECT order_id FROM orders WHERE last_error = 'touched' ORDER BY order_id")
            .compactMap { $0.string("order_id") }
        XCTAssertEqual(touched, ["o-0", "o-1", "o-2", "o-3", "o-4", "o-6", "o-7"])
    }

    /// A leader whose transition is deferrable waits for company; a transition someone waits on
    /// (not deferrable) ends the wait at once, and both share the commit. The wait is made long
    /// here so that nothing but the second transition can end it.
    func testADeferrableLeader_waitsForCompany_andATransitionThatIsNotDeferrable_endsTheWait() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        ledger.groupCommit.deferredWait = 600
        let before = ledger.groupCommit.batches
        let done = DispatchGroup()
        done.enter()
        Thread {
            CommitPace.$deferrable.withValue(true) { _ = try? ledger.transition { 1 } }
            done.leave()
        }.start()
        let deadline = Date().addingTimeInterval(10)
        while !ledger.groupCommit.waitingForCompany && Date() < deadline { usleep(1000) }
        XCTAssertTrue(ledger.groupCommit.waitingForCompany, "the deferrable transition waits for company")
        XCTAssertEqual(ledger.groupCommit.waiting, 1)
        XCTAssertEqual(ledger.groupCommit.batches - before, 0, "it leads, and its batch has not begun")
        XCTAssertNoThrow(try ledger.transition { 2 })
        done.wait()
        XCTAssertEqual(ledger.groupCommit.batches - before, 1, "both in the one commit")
        XCTAssertEqual(ledger.groupCommit.waiting, 0)
    }

    /// Deferrable transitions alone end the wait once a full batch waits.
    func testDeferrableTransitions_commitAtOnce_whenAFullBatchWaits() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        ledger.groupCommit.deferredWait = 600
        let before = ledger.groupCommit.batches
        let done = DispatchGroup()
        for _ in 0..<GroupCommit.fullBatch {
            done.enter()
            Thread {
                CommitPace.$deferrable.withValue(true) { _ = try? ledger.transition { 1 } }
                done.leave()
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "a full batch commits without waiting out the delay")
        XCTAssertEqual(ledger.groupCommit.batches - before, 1)
    }

    // MARK: - Handed-over transitions (`transition(_:then:)`)

    /// Collects a handed-over transition's result, and whether its write was visible to another
    /// connection (committed) at the moment the result came.
    final class Outcome: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        let arrived = DispatchSemaphore(value: 0)

        func record(_ line: String) {
            lock.withLock { lines.append(line) }
            arrived.signal()
        }

        var seen: [String] { lock.withLock { lines } }

        /// Waits for `count` results, at most 30 s.
        func wait(for count: Int) -> Bool {
            (0..<count).allSatisfy { _ in arrived.wait(timeout: .now() + 30) == .success }
        }
    }

    /// Whether another connection sees `order`'s `last_error` as `value` now.
    func committed(_ world: TestWorld, _ order: String, _ value: String) -> Bool {
        guard let reader = try? SQLiteDatabase(path: world.ledgerPath, mode: .readOnly) else { return false }
        defer { try? reader.close() }
        let row = try? reader.query("SELECT last_error FROM orders WHERE order_id = ?", [.text(order)]).first
        return row?.string("last_error") == value
    }

    func testAHandedOverTransition_returnsAtOnce_andItsResultComesOnlyOnceItsCommitIsVisibleToOthers() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, transactionId: "1"))
        let before = ledger.groupCommit.batches
        // A commit held open: the handed-over transition queues behind it, and its caller goes on.
        let release = holdCommit(ledger)
        let outcome = Outcome()
        ledger.transition({ db in
            _ = try db.changedRows("UPDATE orders SET last_error = 'handed over' WHERE order_id = 'o-1'", [])
            return "written"
        }, then: { result in
            let visible = self.committed(world, "o-1", "handed over")
            outcome.record("\((try? result.get()) ?? "failed"), visible to others: \(visible)")
        })
        // The caller is back while the commit ahead is still open.
        XCTAssertEqual(ledger.groupCommit.waiting, 1, "queued behind the held commit")
        XCTAssertEqual(outcome.seen, [], "no result before its commit")
        XCTAssertFalse(committed(world, "o-1", "handed over"))
        release()
        XCTAssertTrue(outcome.wait(for: 1), "its result comes")
        XCTAssertEqual(outcome.seen, ["written, visible to others: true"])
        XCTAssertEqual(ledger.groupCommit.batches - before, 2, "the held commit, then a commit of its own once nobody else led")
        XCTAssertEqual(ledger.groupCommit.waiting, 0)
    }

    /// Handed-over transitions wait for company (nobody's thread waits on them); a transition
    /// someone waits on ends the wait, and one commit holds them all. The wait is made long here
    /// so that nothing but the waiting submitter can end it.
    func testHandedOverTransitions_waitForCompany_andJoinTheCommitOfASubmitterWhoWaits() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        ledger.groupCommit.handedOverWait = 600
        try enqueueOrders(3, world, ledger)
        let before = ledger.groupCommit.batches
        let outcome = Outcome()
        for i in 0..<2 {
            ledger.transition({ db in
                _ = try db.changedRows("UPDATE orders SET last_error = 'handed over' WHERE order_id = ?", [.text("o-\(i)")])
                return i
            }, then: { result in outcome.record("o-\((try? result.get()).map(String.init) ?? "failed")") })
        }
        let deadline = Date().addingTimeInterval(10)
        while !ledger.groupCommit.waitingForCompany && Date() < deadline { usleep(1000) }
        XCTAssertTrue(ledger.groupCommit.waitingForCompany, "the committer queue leads them, waiting for company")
        XCTAssertEqual(ledger.groupCommit.waiting, 2)
        XCTAssertEqual(ledger.groupCommit.batches - before, 0, "nothing committed yet")
        XCTAssertEqual(outcome.seen, [])
        // A claim (not deferrable): its submitter waits on the commit, which begins at once.
        _ = try ledger.transition {
            try ledger.database.query("UPDATE orders SET last_error = 'waited' WHERE order_id = 'o-2'")
        }
        XCTAssertTrue(committed(world, "o-2", "waited"))
        XCTAssertTrue(outcome.wait(for: 2))
        XCTAssertEqual(outcome.seen.sorted(), ["o-0", "o-1"])
        XCTAssertEqual(ledger.groupCommit.batches - before, 1, "the three in one commit")
        XCTAssertTrue(committed(world, "o-0", "handed over") && committed(world, "o-1", "handed over"))
    }

    /// A handed-over transition that fails is rolled back alone, and its result says why; a
    /// commit that fails as a whole gives every handed-over transition in it the commit's error.
    func testAFailingHandedOverTransition_isRolledBackAlone_andAFailedCommit_isEveryonesError() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        try enqueueOrders(8, world, ledger)
        let outcome = Outcome()
        for i in 0..<8 {
            ledger.transition({ db in
                _ = try db.changedRows("UPDATE orders SET last_error = 'handed over' WHERE order_id = ?", [.text("o-\(i)")])
                if i == 5 { throw LedgerError.invalid("refused on purpose") }
                return i
            }, then: { result in
                switch result {
                case let .success(i): outcome.record("o-\(i)")
                case let .failure(error): outcome.record("o-\(i): \(error)")
                }
            })
        }
        XCTAssertTrue(outcome.wait(for: 8))
        XCTAssertEqual(outcome.seen.sorted(), ["o-0", "o-1", "o-2", "o-3", "o-4", "o-5: refused on purpose", "o-6", "o-7"])
        for i in 0..<8 { XCTAssertEqual(committed(world, "o-\(i)", "handed over"), i != 5, "o-\(i)") }

        // A commit that fails as a whole (a deferred foreign key, checked only at COMMIT): the
        // handed-over transition learns the commit's error, and nothing of it stays.
        try ledger.database.execute("""
            PRAGMA foreign_keys = ON;
            CREATE TABLE scratch_parent (id INTEGER PRIMARY KEY);
            CREATE TABLE scratch_child (parent INTEGER REFERENCES scratch_parent(id) DEFERRABLE INITIALLY DEFERRED);
            """)
        let failed = Outcome()
        ledger.transition({ db in
            _ = try db.changedRows("UPDATE orders SET last_error = 'lost with its commit' WHERE order_id = 'o-0'", [])
            _ = try db.changedRows("INSERT INTO scratch_child(parent) VALUES (42)", [])
            return "written"
        }, then: { result in
            switch result {
            case let .success(value): failed.record(value)
            case let .failure(error): failed.record("failed: \(error.constraintViolation ?? "\(error)")")
            }
        })
        XCTAssertTrue(failed.wait(for: 1))
        XCTAssertEqual(failed.seen.count, 1)
        XCTAssertTrue(failed.seen.first?.contains("FOREIGN KEY constraint failed") == true, failed.seen.first ?? "")
        XCTAssertTrue(committed(world, "o-0", "handed over"), "the failed commit left nothing")
    }

    /// Handed-over transitions queued while a submitter leads are not stranded when that leader
    /// is done and nobody else submits: the committer queue leads them.
    func testHandedOverTransitionsLeftBehindALeader_areCommittedByTheCommitterQueue() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        ledger.groupCommit.handedOverWait = 0
        try enqueueOrders(4, world, ledger)
        let before = ledger.groupCommit.batches
        let release = holdCommit(ledger)
        let outcome = Outcome()
        for i in 0..<4 {
            ledger.transition({ db in
                _ = try db.changedRows("UPDATE orders SET last_error = 'handed over' WHERE order_id = ?", [.text("o-\(i)")])
                return i
            }, then: { result in outcome.record("o-\((try? result.get()).map(String.init) ?? "failed")") })
        }
        XCTAssertEqual(ledger.groupCommit.waiting, 4)
        release()
        XCTAssertTrue(outcome.wait(for: 4), "committed although nobody else came")
        XCTAssertEqual(outcome.seen.sorted(), ["o-0", "o-1", "o-2", "o-3"])
        XCTAssertEqual(ledger.groupCommit.batches - before, 2)
        for i in 0..<4 { XCTAssertTrue(committed(world, "o-\(i)", "handed over"), "o-\(i)") }
    }

    /// While handed-over transitions keep coming, each batch's completions run before the next
    /// batch commits (a delivery handed on at once, not when the stream pauses), with the lead
    /// given up: a completion that waits on a transition of its own commits it and the
    /// handed-over ones waiting, instead of waiting on itself.
    func testACompletion_runsBeforeTheNextHandedOverBatch_andMayWaitOnATransitionOfItsOwn() throws {
        let world = try TestWorld()
        let ledger = try world.ledger()
        ledger.groupCommit.handedOverWait = 0
        try enqueueOrders(3, world, ledger)
        let before = ledger.groupCommit.batches
        let gate = DispatchSemaphore(value: 0)
        let firstDone = Outcome()
        let outcome = Outcome()
        ledger.transition({ db in
            gate.wait()
            _ = try db.changedRows("UPDATE orders SET last_error = 'first' WHERE order_id = 'o-0'", [])
            return "first"
        }, then: { _ in
            firstDone.record("first's completion")
            do {
                try ledger.transition {
                    try ledger.database.query("UPDATE orders SET last_error = 'from a completion' WHERE order_id = 'o-2'")
                }
                outcome.record("the completion's own transition committed")
            } catch {
                outcome.record("the completion's own transition failed: \(error)")
            }
        })
        let deadline = Date().addingTimeInterval(10)
        while ledger.groupCommit.batches == before && Date() < deadline { usleep(1000) }
        XCTAssertEqual(ledger.groupCommit.batches - before, 1, "the first one's batch runs, held at its gate")
        ledger.transition({ db in
            _ = try db.changedRows("UPDATE orders SET last_error = 'second' WHERE order_id = 'o-1'", [])
            return firstDone.seen.joined(separator: ", ")
        }, then: { result in outcome.record("second saw: \((try? result.get()) ?? "failed")") })
        XCTAssertEqual(ledger.groupCommit.waiting, 1, "the second queues behind the first's batch")
        gate.signal()
        XCTAssertTrue(outcome.wait(for: 2), "no completion waits on itself")
        XCTAssertEqual(outcome.seen.sorted(), ["second saw: first's completion", "the completion's own transition committed"])
        XCTAssertTrue(committed(world, "o-0", "first") && committed(world, "o-1", "second")
                          && committed(world, "o-2", "from a completion"))
    }
}
