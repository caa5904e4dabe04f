import Foundation

/// Group commit for the ledger's per-order transitions: the workers of a pass each submit their
/// transition; one of them (the leader) runs every transition waiting at that moment in one
/// `BEGIN IMMEDIATE` transaction, commits once (one fsync for all), and only then tells each
/// worker its result. Durability is unchanged: no caller learns of its transition before the
/// commit that holds it is on disk, and a transition that fails is rolled back without touching
/// the others (on SQLite the batch runs again, each transition in its own savepoint: `runBatch`).
///
/// This is the technique of PostgreSQL's commit_delay and of SQLite's own advice to batch
/// writes in one transaction (https://www.sqlite.org/faq.html#q19), without waiting on a timer:
/// a batch is whatever queued while the previous commit was syncing.
package final class GroupCommit: @unchecked Sendable {
    /// One submitted transition: runs on the leader's thread while its submitter waits.
    package final class Item {
        /// Dropped once run: it borrows a caller's non-escaping closure, which must not outlive
        /// the caller's wait (`withoutActuallyEscaping` checks that).
        package var run: (() -> Void)?
        /// Set when the batch's commit failed after `run` succeeded: the work was rolled back.
        package var commitFailure: (any Error)?
        package var done = false
        /// Submitted after another item of the same caller (`submit(_ items:)`), whose wake covers it.
        package var wokenWithFirst = false
        /// Its submitter's next step does not wait on this commit (`CommitPace`).
        package var deferrable = false
        /// Each submitter sleeps on its own semaphore: woken once, either done or made leader
        /// (a shared condition would wake every waiting worker after every commit).
        package let wake = DispatchSemaphore(value: 0)
        /// Handed over (`submitDetached`): nobody waits on `wake`; this runs once the commit
        /// holding the item finished (or failed), on the thread that led it, after the lead.
        package var completion: (() -> Void)?
        package var isDetached: Bool { completion != nil }

        package init(run: @escaping () -> Void) { self.run = run }
    }

    /// How long a leader whose own transition is deferrable (`CommitPace`) waits for others to
    /// join its commit: at about 600 transitions a second, about ten share each commit instead
    /// of one or two (the benchmark's webhook row: 0.13 commits an order, against 0.28 with
    /// 4 ms). The wait ends early once `fullBatch` wait or one that is not deferrable comes (a
    /// claim), so a verification worker never waits it out.
    package static let defaultDeferredWait: TimeInterval = 0.015
    package static let fullBatch = 64
    /// `defaultDeferredWait`; tests set it.
    package var deferredWait = GroupCommit.defaultDeferredWait
    /// How long a thread leading handed-over items (`submitDetached`) waits for company:
    /// `defaultDeferredWait`; tests set it apart.
    package var handedOverWait = GroupCommit.defaultDeferredWait
    /// One lock for the queue, and the condition a deferring leader waits on.
    private let lock = NSCondition()
    private var deferring = false
    private var queue: [Item] = []
    private var leading = false
    private var batchesRun = 0
    /// Where handed-over items are led when no submitter leads (`leadDetached`).
    private let committer = DispatchQueue(label: "settle.ledger.group-commit")

    /// How many submitters wait for the batch being committed (tests look).
    package var waiting: Int { lock.withLock { queue.count } }
    /// How many batches (transactions) ran so far (tests look).
    package var batches: Int { lock.withLock { batchesRun } }
    /// Whether a leader waits for company now (tests look).
    package var waitingForCompany: Bool { lock.withLock { deferring } }

    /// Submits `item` and returns once a commit holding it finished (or failed). `runBatch`
    /// is called by whichever submitter leads, with every item waiting at that moment; when
    /// its own item is done, the leader hands the lead to the first item still waiting.
    package func submit(_ item: Item, runBatch: @escaping @Sendable ([Item]) -> Void) {
        submit([item], runBatch: runBatch)
    }

    /// Submits several items at once (one caller's transitions, such as a batch hook's grants)
    /// and returns once the commit holding them all finished: they join the queue together, so
    /// one batch always takes all of them and one fsync covers them, where submitting them one
    /// after another would wait for a commit each. Only the first item's submitter is woken.
    package func submit(_ items: [Item], runBatch: @escaping @Sendable ([Item]) -> Void) {
        guard let item = items.first else { return }
        for sibling in items.dropFirst() { sibling.wokenWithFirst = true }
        lock.lock()
        queue.append(contentsOf: items)
        // A leader waiting for company commits now: this submitter waits on the commit.
        if deferring && (queue.count >= Self.fullBatch || !item.deferrable) { lock.signal() }
        if leading {
            lock.unlock()
            item.wake.wait()
            if item.done { return }
        } else {
            leading = true
            lock.unlock()
        }
        lead(item, runBatch: runBatch)
    }

    /// Hands `item` over without waiting (its `completion` is set): it joins the batch being
    /// gathered, or, when nobody leads, the committer queue leads one (waiting for company as
    /// the item's submitter would have). Durability is as for `submit`: the completion learns
    /// of the transition only after the commit that holds it.
    package func submitDetached(_ item: Item, runBatch: @escaping @Sendable ([Item]) -> Void) {
        precondition(item.isDetached, "a handed-over item says what runs once it is committed")
        lock.lock()
        queue.append(item)
        if deferring && (queue.count >= Self.fullBatch || !item.deferrable) { lock.signal() }
        guard !leading else { return lock.unlock() }
        leading = true
        lock.unlock()
        leadDetached(runBatch)
    }

    /// The lead, taken by this thread (`own`: its submitter's item, nil on the committer queue):
    /// runs the batch waiting, wakes its submitters, then hands the lead to the first submitter
    /// still waiting, or to the committer queue when only handed-over items wait. The handed-over
    /// items' completions run last, once this thread no longer leads, so a completion that writes
    /// to the ledger joins a later commit like any submitter.
    private func lead(_ own: Item?, runBatch: @escaping @Sendable ([Item]) -> Void) {
        var completions: [() -> Void] = []
        defer { for completion in completions { completion() } }
        lock.lock()
        if (own ?? queue.first)?.deferrable == true { waitForCompany(own == nil ? handedOverWait : deferredWait) }
        let batch = queue
        queue = []
        batchesRun += 1
        lock.unlock()
        runBatch(batch)
        // Every item is done before any submitter wakes: a woken caller's siblings are done too.
        for done in batch {
            done.run = nil
            done.done = true
        }
        for done in batch where done !== own && !done.wokenWithFirst {
            if let completion = done.completion {
                completions.append(completion)
                done.completion = nil
            } else {
                done.wake.signal()
            }
        }
        lock.lock()
        if let next = queue.first(where: { !$0.isDetached }) {
            // A waiting submitter leads next; its batch takes the handed-over items too.
            lock.unlock()
            next.wake.signal()
            return
        }
        // Only handed-over items wait, or none. A submitter goes back to its caller and the
        // committer queue leads them; the committer gives the lead up while its completions run
        // and takes it back after (`leadHandedOver`).
        guard own != nil && !queue.isEmpty else {
            leading = false
            return lock.unlock()
        }
        lock.unlock()
        leadDetached(runBatch)
    }

    /// Leads the handed-over items waiting on the committer queue (the lead is already taken
    /// for it): one serial queue for the ledger's life, whose thread the system keeps, rather
    /// than a thread each time.
    private func leadDetached(_ runBatch: @escaping @Sendable ([Item]) -> Void) {
        committer.async { self.leadHandedOver(runBatch) }
    }

    /// One batch after another while handed-over items wait and nobody else took the lead:
    /// each batch's completions (deliveries handed on) run before the next batch, not when the
    /// stream of handed-over items pauses.
    private func leadHandedOver(_ runBatch: @escaping @Sendable ([Item]) -> Void) {
        repeat {
            lead(nil, runBatch: runBatch)
        } while lock.withLock({
            guard !leading && !queue.isEmpty else { return false }
            leading = true
            return true
        })
    }
}

extension GroupCommit {
    /// Called with the lock held by a leader whose own item is deferrable: waits (the lock
    /// released meanwhile) until `wait` has passed, `fullBatch` items wait or one that is not
    /// deferrable does.
    private func waitForCompany(_ wait: TimeInterval) {
        let deadline = Date(timeIntervalSinceNow: wait)
        deferring = true
        while queue.count < Self.fullBatch && queue.allSatisfy(\.deferrable) {
            guard lock.wait(until: deadline) else { break }
        }
        deferring = false
    }
}

extension SQLiteLedger {
    /// A per-order transition, committed together with the other workers' transitions that
    /// are waiting at the same moment (see `GroupCommit`). Errors are as for `write`.
    package func transition<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        var result: Result<T, any Error> = .failure(LedgerError.invalid("transition did not run"))
        let outcome: Result<T, any Error> = withoutActuallyEscaping(body) { body in
            let item = GroupCommit.Item { result = self.asTransition(body) }
            item.deferrable = CommitPace.deferrable
            groupCommit.submit(item) { [self] batch in runBatch(batch) }
            if let failure = item.commitFailure { return .failure(failure) }
            return result
        }
        switch outcome {
        case let .success(value): return value
        case let .failure(error): throw SQLiteLedger.ledgerError(error)
        }
    }

    /// A per-order transition its caller does not wait for: it joins the group commit as
    /// `transition` does (waiting for company), and `done` gets its result once the commit that
    /// holds it finished, or the error (the commit's when the transition's own work succeeded).
    package func transitionDetached<T>(_ body: @escaping () throws -> T,
                                       done: @escaping (Result<T, LedgerError>) -> Void) {
        var result: Result<T, any Error> = .failure(LedgerError.invalid("transition did not run"))
        let item = GroupCommit.Item { result = self.asTransition(body) }
        item.deferrable = true
        item.completion = { [item] in  // the lead drops this closure once it took it: no cycle stays
            if let failure = item.commitFailure { return done(.failure(SQLiteLedger.ledgerError(failure))) }
            done(result.mapError(SQLiteLedger.ledgerError))
        }
        groupCommit.submitDetached(item) { [self] batch in runBatch(batch) }
    }

    /// Several transitions of one caller, each its own unit as `transition` (its own savepoint:
    /// one failing leaves the others), submitted together so that one commit holds them all.
    /// Each result apart, in order.
    package func transitions<T>(_ bodies: [() throws -> T]) -> [Result<T, LedgerError>] {
        var results = [Result<T, any Error>](repeating: .failure(LedgerError.invalid("transition did not run")),
                                             count: bodies.count)
        let items = bodies.indices.map { index in
            GroupCommit.Item { results[index] = self.asTransition(bodies[index]) }
        }
        for item in items { item.deferrable = CommitPace.deferrable }
        groupCommit.submit(items) { [self] batch in runBatch(batch) }
        return zip(items, results).map { item, result in
            if let failure = item.commitFailure { return .failure(SQLiteLedger.ledgerError(failure)) }
            return result.mapError(SQLiteLedger.ledgerError)
        }
    }

    /// Runs `body` as one transition of the batch being run (`runBatch`): bare on the batch's
    /// first run, inside its own savepoint on the second.
    private func asTransition<T>(_ body: () throws -> T) -> Result<T, any Error> {
        guard batchRun.savepoints else {
            do {
                return .success(try body())
            } catch {
                batchRun.failed = true
                return .failure(error)
            }
        }
        return inSavepoint(body)
    }

    /// Runs `body` inside its own savepoint of the batch's transaction: kept when it returns,
    /// rolled back (and only it) when it throws.
    private func inSavepoint<T>(_ body: () throws -> T) -> Result<T, any Error> {
        do {
            try database.query("SAVEPOINT transition")
            do {
                let value = try body()
                try database.query("RELEASE transition")
                return .success(value)
            } catch {
                _ = try? database.query("ROLLBACK TO transition")
                _ = try? database.query("RELEASE transition")
                return .failure(error)
            }
        } catch {
            return .failure(error)
        }
    }

    /// Runs a batch of transitions in one write transaction, holding this process's connection.
    ///
    /// First without savepoints: a savepoint journals the original of every page its transition
    /// changes (about 17 page copies a transition, 12 % of a pass's instructions), and
    /// transitions almost never fail. When one does, nothing of that run is kept (`ROLLBACK`)
    /// and the batch runs again with each transition in its own savepoint, so the one that
    /// fails is rolled back alone and the others commit; each result is the second run's.
    /// A batch of one needs no second run: its transition's failure is the batch's.
    private func runBatch(_ batch: [GroupCommit.Item]) {
        lock.lock()
        defer { lock.unlock() }
        if runOnce(batch, savepoints: false) || batch.count == 1 { return }
        _ = runOnce(batch, savepoints: true)
    }

    /// One transaction for `batch`; false (and nothing kept) when a transition failed outside
    /// a savepoint.
    private func runOnce(_ batch: [GroupCommit.Item], savepoints: Bool) -> Bool {
        do {
            try database.query("BEGIN IMMEDIATE")
        } catch {
            for item in batch { item.commitFailure = error }
            return true
        }
        batchRun = BatchRun(savepoints: savepoints)
        for item in batch {
            item.run?()
            if batchRun.failed {
                _ = try? database.query("ROLLBACK")
                return false
            }
        }
        do {
            try database.query("COMMIT")
        } catch {
            _ = try? database.query("ROLLBACK")
            for item in batch { item.commitFailure = error }
        }
        return true
    }
}

/// How the group commit's batch being run isolates its transitions (`SQLiteLedger.runBatch`).
package struct BatchRun {
    /// Each transition inside its own savepoint (the second run of a batch).
    var savepoints = false
    /// A transition failed outside a savepoint: this run is rolled back.
    var failed = false
}
