import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger
#if canImport(Glibc)
import Glibc
#endif

/// `settle retry --reason R [--state S] [--since T] [--dry-run] [--yes] --note TEXT`: every order
/// set aside as R, handed back at once after an incident, counted and confirmed first.
enum BulkRetryCommand {
    /// At most this many orders a run: a larger backlog is retried in several runs (each says how many are left).
    static let cap = 100_000

    static func run(_ context: CommandContext, _ parsed: ParsedArguments) throws {
        guard parsed.positionals.isEmpty else {
            throw UsageError(command: "retry", message: "--reason retries every order set aside so; name no order with it")
        }
        if parsed.value("--receipt-file") != nil || parsed.value("--signed-transaction-file") != nil {
            throw UsageError(command: "retry", message: "a new proof belongs to one order, not to a retry by --reason")
        }
        let reason = parsed.value("--reason") ?? ""
        let stateName = parsed.value("--state") ?? OrderState.needsAttention.rawValue
        guard let state = OrderState(rawValue: stateName), state == .needsAttention || state == .rejected else {
            throw UsageError(command: "retry", message: "--state: \"\(stateName)\" is not needs_attention or rejected (only those are retried)")
        }
        if let refusal = BulkRetry.refusal(reason: reason) { throw CommandFailure(.dataError, refusal) }
        let now = context.time.unixSeconds
        var since: Int64? = nil
        if let text = parsed.value("--since") {
            guard let value = Self.time(text, now: now) else {
                throw UsageError(command: "retry", message: "--since: \"\(text)\" is not an RFC 3339 time or an age like 30m, 6h, 2d")
            }
            since = value
        }
        let note = parsed.value("--note")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let dryRun = parsed.has("--dry-run")
        guard dryRun || !note.isEmpty else {
            throw UsageError(command: "retry", message: "a retry by --reason needs --note: say why (the incident, a ticket)")
        }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try configuration.openLedger(dryRun ? .readOnly : .current, time: context.time)
            let found = try BulkRetry.orderIds(ledger, OrderList.Query(state: state, reason: reason, since: since), cap: cap)
            let scope = "\(state.rawValue) as \(reason)" + (since.map { ", changed since \(Timestamp.rfc3339(unixSeconds: $0))" } ?? "")
            guard !found.ids.isEmpty else { return context.print("no order is \(scope); nothing to retry") }
            let count = Plural.count(found.ids.count, "order")
            context.print("\(count) \(scope)" + (found.total > found.ids.count ? " (of \(found.total); run again for the rest)" : ""))
            context.print("  " + found.ids.prefix(10).map(Verdict.shellWord).joined(separator: " ") + (found.ids.count > 10 ? " …" : ""))
            if let warning = BulkRetry.warning(reason: reason) { context.printError("settle retry: warning: \(warning)") }
            if dryRun { return context.print("dry run: would put \(count) back to pending, due now; nothing changed") }
            if !parsed.has("--yes") {
                guard isatty(0) == 1 && isatty(2) == 1 else {
                    throw UsageError(command: "retry", message: "not on a terminal: add --yes to retry \(count) (see --dry-run first)")
                }
                context.standardError("retry \(count)? [y/N] ")
                guard let answer = readLine(), ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased()) else {
                    return context.print("nothing changed")
                }
            }
            let outcome = try BulkRetry.run(ledger, orderIds: found.ids, state: state, reason: reason, note: note,
                                            by: Operator.commandLine(environment: context.environment))
            for skip in outcome.skipped { context.printError("settle retry: skipped \(skip.orderId): \(skip.why)") }
            context.print("retried \(Plural.count(outcome.retried.count, "order")): pending, due now"
                          + (outcome.skipped.isEmpty ? "" : "; \(outcome.skipped.count) skipped (changed since they were listed)"))
        } catch let error as LedgerError {
            throw CommandFailure.from(error)
        }
    }

    /// "2026-12-05T10:00:00Z", or an age before now: "30m", "6h", "2d".
    static func time(_ text: String, now: Int64) -> Int64? {
        if let ms = ConfigurationDecoder.rfc3339Milliseconds(text) { return ms / 1000 }
        guard let unit = text.last, let n = Int64(text.dropLast()), n >= 0,
              let seconds = ["m": Int64(60), "h": 3600, "d": 86400][String(unit)] else { return nil }
        // An age from the command line may be absurd: refused, never an overflow.
        let (age, overflow) = n.multipliedReportingOverflow(by: seconds)
        return overflow ? nil : now.saturatingSubtracting(age)
    }
}
