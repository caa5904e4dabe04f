import Foundation
import SettleModel
import SettleConfig
import SettleLedger

/// `settle transfer ORDER_ID --to-user USER_ID --note TEXT`: moves a granted purchase to another
/// user (the buyer used the wrong account). Records the request; the next pass carries it out.
enum TransferCommand {
    static let spec = ArgumentSpec(command: "transfer", options: [.init(name: "--to-user", takesValue: true),
                                                                  .init(name: "--note", takesValue: true)],
                                   positionals: 1...1)

    static let help = """
    Usage: settle transfer ORDER_ID --to-user USER_ID --note TEXT

    Moves a purchase settle granted to another user (the buyer used the wrong account). Records
    the request in the ledger; the next pass (settle reconcile, or the daemon) carries it out:
    the revoke route takes it back from the order's user (idempotency key
    transfer:ORDER_ID:N:revoke), then the grant route gives it to USER_ID (transfer:ORDER_ID:N:grant),
    N being the order's transfer number. Then the order is USER_ID's: a later refund revokes it
    from them. Each step is recorded once done, so a crash resumes at the step not done, under
    the same key. A failing hook is retried with the usual backoff; a refusal (exit 65, HTTP 4xx)
    or attempts run out leave the transfer waiting, the reason in settle status ORDER_ID; ask
    for the same transfer again to resume it.

      --to-user USER_ID  required: the user who gets the purchase
      --note TEXT        required: why, and who asked (a ticket number); kept in the history

    Exit 65 (nothing changes) unless the order is finished and holds the grant settle made
    through the hook, is not refunded or revoked, belongs to another user, and has no other
    transfer or redelivery in progress. Needs a revoke route (delivery.revoke_command, or
    delivery.webhook.revoke_url): without one the transfer waits for it.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard let user = parsed.value("--to-user"), !user.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw UsageError(command: "transfer", message: "--to-user USER_ID is required")
        }
        let note = try parsed.supportNote(command: "transfer")
        let configuration = try context.loadConfiguration(parsed)
        let orderId = parsed.positionals[0]
        let request: TransferRequest
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            request = try ledger.requestTransfer(orderId: orderId, toUser: user, note: note,
                                                 by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        if !hasRevokeRoute(configuration) {
            context.printError("settle transfer: warning: no revoke route is configured (delivery.revoke_command, or "
                               + "delivery.webhook.revoke_url): the transfer waits until one is")
        }
        context.print(request.resumed
                      ? "transfer \(request.number) of \(orderId) to \(request.toUser) resumed: the next pass carries it on"
                      : "transfer of \(orderId) to \(request.toUser) requested: the next pass revokes it from \(request.fromUser) "
                        + "and grants it to \(request.toUser)")
    }

    /// Whether revokes have somewhere to go.
    static func hasRevokeRoute(_ configuration: Configuration) -> Bool {
        configuration.delivery.revokeCommand != nil || configuration.delivery.revokeURL != nil
    }
}

extension ParsedArguments {
    /// A support action's `--note` (transfer, redeliver): required, and not blank.
    func supportNote(command: String) throws(UsageError) -> String {
        guard let note = value("--note"), !note.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw UsageError(command: command, message: "--note is required: say why (a ticket number)")
        }
        return note
    }
}
