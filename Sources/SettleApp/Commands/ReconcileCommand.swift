import SettleBase
import SettleLedger
import SettleEngine

/// `settle reconcile [--order ID]... [--dry-run]`: one pass, then exit.
enum ReconcileCommand {
    static let spec = ArgumentSpec(command: "reconcile", options: [
        .init(name: "--order", takesValue: true, repeatable: true),
        .init(name: "--dry-run", takesValue: false),
    ])

    static let help = """
    Usage: settle reconcile [--order ID]... [--dry-run] [--config PATH]

    Runs one pass over every due order (or only the named orders, due or not): re-verifies each
    with its store (\(StoreNames.displayNames("or"))), grants it through the delivery hook and marks
    it finished (a store that must hear of a delivery first is told before),
    then prints "reconciled N: F finished, R rejected, T retrying, A needs attention".

      --order ID   reconcile only this order (repeatable)
      --dry-run    verify with the stores and report what would be granted; call no hook, change nothing

    Exit: 0 the pass ran; 65 a named order does not exist; 69 a store was unavailable for the
    whole pass (its orders used no attempt; the other stores' orders went on); 74 ledger I/O error;
    78 configuration error (including a store rejecting settle's credentials: a shared secret, a key).
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let configuration = try context.loadConfiguration(parsed)
        let ledger: any SettleLedger
        do {
            ledger = try configuration.openLedger(.migrating, time: context.time)
        } catch {
            throw CommandFailure.from(error)
        }
        let reconciler: Reconciler
        let metrics = Metrics()
        do {
            reconciler = try Reconciler.configured(configuration, ledger: ledger, environment: context.environment,
                                                   log: context.log, metrics: metrics, modules: StoreModules.all)
        } catch {
            throw CommandFailure.from(error)
        }
        let orderIds = parsed.all("--order")
        if parsed.has("--dry-run") {
            return try dryRun(reconciler, orderIds: orderIds, context: context)
        }
        ChildReaper.becomeSubreaper()
        let report: PassReport
        do {
            report = try reconciler.runPass(orderIds: orderIds)
        } catch {
            throw CommandFailure.from(error)
        }
        // Every hook of the pass has been waited for: only hooks' orphans are left (ChildReaper).
        ChildReaper.reapExited()
        writeMetrics(metrics, reconciler: reconciler, context: context)
        for skipped in report.skipped {
            context.printError("settle reconcile: order \(skipped.orderId) not reconciled: \(skipped.why)")
        }
        context.print(report.summaryLine)
        if let fault = report.configurationFault {
            throw CommandFailure(.config, "stopped: \(fault)")
        }
        if !report.storesUnavailableForWholePass.isEmpty {
            let breakers = (try? reconciler.ledger.breakers()) ?? [:]
            let why = report.storesUnavailableForWholePass.map { store in
                if let until = report.breakerWaits[store] {
                    return "the \(store.displayName) breaker is open until \(Timestamp.rfc3339(unixSeconds: until))"
                        + (breakers[store]?.lastError.map { " (last error: \($0))" } ?? "") + "; none of its orders was claimed"
                }
                return "\(store.owner) was unavailable for the whole pass; no \(store.displayName) order used an attempt"
            }
            throw CommandFailure(.unavailable, why.joined(separator: "; ")
                + (report.breakerWaits.isEmpty ? "" : ". `settle reconcile --order ID` tries named orders anyway"))
        }
        if report.skipped.contains(where: { !$0.exists }) {
            throw CommandFailure(.dataError, "some named orders are not in the ledger")
        }
    }

    /// A timer-driven one-shot pass is the only pass some installations run: it writes the
    /// metrics file as the daemon does, its counters counting this pass. A file that cannot be
    /// written is reported, but the pass still counts as run.
    static func writeMetrics(_ metrics: Metrics, reconciler: Reconciler, context: CommandContext) {
        guard let path = reconciler.configuration.metricsFile else { return }
        do {
            let now = reconciler.ledger.time.unixSeconds
            let window = now - Metrics.revenueWindowSeconds
            metrics.observeRevenue(try? reconciler.ledger.revenue(since: window, until: now + 1))
            try metrics.write(to: path, summary: try reconciler.ledger.summary(OrderFilter(limit: 0)),
                              bundleId: reconciler.configuration.bundleId)
        } catch {
            context.printError("settle reconcile: cannot write the metrics file \(path): \(error)")
        }
    }

    static func dryRun(_ reconciler: Reconciler, orderIds: [String], context: CommandContext) throws {
        let preview: DryRunReport
        do {
            preview = try reconciler.dryRun(orderIds: orderIds)
        } catch let error as LedgerError {
            throw CommandFailure.from(error)
        }
        for line in preview.lines { context.print(line) }
        context.print(preview.summaryLine)
        if preview.storeUnavailableForWholePass {
            throw CommandFailure(.unavailable, "no store answered during the whole dry run")
        }
        if preview.missing > 0 {
            throw CommandFailure(.dataError, "some named orders are not in the ledger")
        }
    }
}
