import SettleModel

/// `settle retry ORDER_ID... [--note TEXT] [--receipt-file F | --signed-transaction-file F]`:
/// hands orders back to the machine, with a fresh proof when the customer sent one.
enum RetryCommand {
    static let spec = ArgumentSpec(command: "retry", options: [
        .init(name: "--note", takesValue: true), .init(name: "--receipt-file", takesValue: true),
        .init(name: "--signed-transaction-file", takesValue: true),
        .init(name: "--reason", takesValue: true), .init(name: "--state", takesValue: true), .init(name: "--since", takesValue: true),
        .init(name: "--dry-run", takesValue: false), .init(name: "--yes", takesValue: false),
    ], positionals: 0...1000)

    static let help = """
    Usage: settle retry ORDER_ID... [--note TEXT] [--receipt-file FILE|- | --signed-transaction-file FILE|-]
           settle retry --reason R [--state needs_attention|rejected] [--since T] [--dry-run] [--yes] --note TEXT

    Puts needs_attention or rejected orders back to pending, due now, with the attempt counter
    reset. The note goes into each order's history. All or nothing: if any named order is
    unknown or in another state, nothing changes (exit 65).

      --note TEXT                     why (a ticket number); kept in the history
      --receipt-file FILE             a fresh base64 app receipt for the one named order
      --signed-transaction-file FILE  a fresh StoreKit 2 signed transaction for the one named order

    The previous proof is kept (the history names it). A warning on stderr says when the order
    will most likely fail the same way (refunded, another app's receipt, the same proof again),
    and what fixes it (token_unverifiable: settle bind ORDER_ID --app-account-token TOKEN).

    After an incident, --reason retries every order set aside with that reason (in needs_attention,
    or --state rejected), changed since --since (RFC 3339, or an age: 30m, 6h, 2d): it prints how
    many and what a retry will most likely do, then asks on a terminal (elsewhere --yes is
    required). --dry-run prints and changes nothing. Each order's history names the operator; an
    order that changed meanwhile is skipped and named.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        if parsed.value("--reason") != nil { return try BulkRetryCommand.run(context, parsed) }
        for flag in ["--state", "--since", "--dry-run", "--yes"] where parsed.has(flag) || parsed.value(flag) != nil {
            throw UsageError(command: "retry", message: "\(flag) belongs to a retry by --reason")
        }
        guard !parsed.positionals.isEmpty else {
            throw UsageError(command: "retry", message: "name the orders to retry, or --reason R for every order set aside as R")
        }
        let receipt = parsed.value("--receipt-file"), signed = parsed.value("--signed-transaction-file")
        if receipt != nil && signed != nil {
            throw UsageError(command: "retry", message: "give one new proof: --receipt-file or --signed-transaction-file")
        }
        if (receipt != nil || signed != nil) && parsed.positionals.count != 1 {
            throw UsageError(command: "retry", message: "a new proof belongs to one order; name exactly one")
        }
        let proof: ReplacementProof? = try receipt.map { .receipt(try EnqueueCommand.readReceipt($0)) }
            ?? signed.map { .signedTransaction(try EnqueueCommand.readSignedTransaction($0)) }
        let configuration = try context.loadConfiguration(parsed)
        let retried: [RetriedOrder]
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            retried = try ledger.retry(orderIds: parsed.positionals, note: parsed.value("--note"), proof: proof,
                                       by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        for order in retried {
            if let warning = warning(order, newProof: proof != nil) { context.printError("settle retry: warning: \(warning)") }
        }
        context.print("retrying \(parsed.positionals.joined(separator: ", ")): pending, due now")
    }

    /// Why the retried order will most likely end the same way, if it will.
    static func warning(_ order: RetriedOrder, newProof: Bool) -> String? {
        if newProof {
            return order.proofUnchanged ? "\(order.orderId): the new proof is the same as the old one" : nil
        }
        guard let reason = order.previousReason, let advice = Verdict.retryAdvice(reason) else { return nil }
        let said = advice.replacingOccurrences(of: " ID", with: " \(Verdict.shellWord(order.orderId))")
            .replacingOccurrences(of: "TXN", with: order.transactionId ?? "TXN")
        switch order.previousState {
        case .rejected:
            return "\(order.orderId) was rejected as \(reason) (\(Verdict.explanation(reason))); "
                + "it will most likely be rejected the same way. " + said
        case .needsAttention:
            // Set aside for a person: the reasons with advice are the ones a retry alone does not fix.
            return "\(order.orderId) needed attention as \(reason) (\(Verdict.explanation(reason))): " + said
        default:
            return nil
        }
    }
}
