import SettleModel

/// `settle retry ORDER_ID... [--note TEXT] [--receipt-file F | --signed-transaction-file F]`:
/// hands orders back to the machine, with a fresh proof when the customer sent one.
enum RetryCommand {
    static let spec = ArgumentSpec(command: "retry", options: [
        .init(name: "--note", takesValue: true), .init(name: "--receipt-file", takesValue: true),
        .init(name: "--signed-transaction-file", takesValue: true),
    ], positionals: 1...1000)

    static let help = """
    Usage: settle retry ORDER_ID... [--note TEXT] [--receipt-file FILE|- | --signed-transaction-file FILE|-]

    Puts needs_attention or rejected orders back to pending, due now, with the attempt counter
    reset. The note goes into each order's history. All or nothing: if any named order is
    unknown or in another state, nothing changes (exit 65).

      --note TEXT                     why (a ticket number); kept in the history
      --receipt-file FILE             a fresh base64 app receipt for the one named order
      --signed-transaction-file FILE  a fresh StoreKit 2 signed transaction for the one named order

    The previous proof is kept (the history names it). A warning on stderr says when the order
    will most likely fail the same way (refunded, another app's receipt, the same proof again).
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
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
        guard order.previousState == .rejected, let reason = order.previousReason,
              let advice = Verdict.retryAdvice(reason) else { return nil }
        return "\(order.orderId) was rejected as \(reason) (\(Verdict.explanation(reason))); it will most likely be rejected the same way. "
            + advice.replacingOccurrences(of: " ID", with: " \(Verdict.shellWord(order.orderId))")
                .replacingOccurrences(of: "TXN", with: order.transactionId ?? "TXN")
    }
}
