/// Whether the transitions a thread submits may wait a moment for others to share their commit.
///
/// A commit costs an fsync (and the pages it wrote) however few transitions it holds. Workers
/// whose next step does not wait on the commit (the recorders of the stores' answers, the
/// delivery workers finishing orders) mark their transitions deferrable: a group commit led by
/// one of them waits up to `GroupCommit.defaultDeferredWait` for company, as PostgreSQL's
/// `commit_delay` does, and ends the wait at once when a transition that someone is waiting on
/// (a claim) arrives. Durability is unchanged: each caller still returns only after its commit.
package enum CommitPace {
    @TaskLocal package static var deferrable = false
}
