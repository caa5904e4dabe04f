import Foundation
import SettleModel
import SettleConfig
import SettleLedger

/// `settle redeliver ORDER_ID --note TEXT`: re-sends what settle last finished for an order to
/// the hook, under its original key, for a backend that lost it. Records the request; the next
/// pass carries it out.
enum RedeliverCommand {
    static let spec = ArgumentSpec(command: "redeliver", options: [.init(name: "--note", takesValue: true)], positionals: 1...1)

    static let help = """
    Usage: settle redeliver ORDER_ID --note TEXT

    For a backend that lost what the hook told it (a restore from backup): re-sends the last
    thing settle finished for the order, with its original idempotency key and document, so a
    backend that has it does nothing and one that lost it applies it. That is the order's
    grant; after a transfer, the transfer's grant to the new user; after a refund or
    revocation, the revoke (to the revoke route). Records the request in the ledger; the next
    pass (settle reconcile, or the daemon) sends it, and the order's history says what the hook
    answered ("redelivered", hook exit 0). A failing hook is retried with the usual backoff; a
    refusal leaves it waiting (settle status ORDER_ID), and settle redeliver again resumes it.

      --note TEXT  required: why, and who asked (a ticket number); kept in the history

    Exit 65 (nothing changes) for an order the hook never granted, one settle is still working
    on, or one with a transfer or redelivery in progress.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let note = try parsed.supportNote(command: "redeliver")
        let configuration = try context.loadConfiguration(parsed)
        let orderId = parsed.positionals[0]
        let request: RedeliveryRequest
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            request = try ledger.requestRedelivery(orderId: orderId, note: note, by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        if request.target.isRevoke && !TransferCommand.hasRevokeRoute(configuration) {
            context.printError("settle redeliver: warning: no revoke route is configured (delivery.revoke_command, or "
                               + "delivery.webhook.revoke_url): the revoke waits until one is")
        }
        context.print("redelivery of \(orderId) " + (request.resumed ? "resumed" : "requested")
                      + ": the next pass re-sends \(request.what) under its original key \(request.idempotencyKey)")
    }
}
