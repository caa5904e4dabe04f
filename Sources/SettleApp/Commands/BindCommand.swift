import Foundation
import SettleModel
import SettleConfig
import SettleLedger

/// `settle bind ORDER_ID --app-account-token T --note TEXT [--replace]` (issue 36): stores the
/// account token of an order's user, so a `token_unverifiable` order is verified against it at
/// the next pass, without SQL. The rules (which orders, which tokens) are `AccountTokenBinding`'s
/// and the ledger's; this only reads the arguments and says what happened.
enum BindCommand {
    static let spec = ArgumentSpec(command: "bind", options: [.init(name: "--app-account-token", takesValue: true),
                                                              .init(name: "--note", takesValue: true),
                                                              .init(name: "--replace", takesValue: false)],
                                   positionals: 1...1)

    static let help = """
    Usage: settle bind ORDER_ID --app-account-token TOKEN --note TEXT [--replace]

    For an order in needs_attention with reason token_unverifiable (its purchase names its buyer
    by an account token, and the order's user's token is unknown to settle): stores TOKEN, the
    token your backend gave this user (\(StoreRegistry.descriptors.map { "\($0.displayName): \($0.accountIdLabel)" }.joined(separator: "; "))), with the order and puts it back to
    pending, due now. The next pass grants it only if the purchase's token is TOKEN; otherwise
    it is rejected as user_mismatch. Take TOKEN from your backend's record of the user, never
    from the purchase: copying the purchase's token would bind any purchase to anyone.

    Refused (exit 65, nothing written) for any other reason (proof_unbound: the purchase carries
    no token; user_mismatch: it names another user's, and binding would hand it over), a token
    that is not in the form the order's store takes (a UUID where the store says so, and no
    longer than the store allows), a token another user's order carries, a different
    token already stored (unless --replace), or user_binding.app_account_token other than order
    (then a stored token is never read). History and the audit log name the operator and the
    token's fingerprint (sha256:…), never the token.

      --app-account-token TOKEN  the order's user's token
      --note TEXT                why (a ticket number); required, kept in the history
      --replace                  replace a different token the order already carries
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard let token = parsed.value("--app-account-token"), !token.isEmpty else {
            throw UsageError(command: "bind", message: "--app-account-token TOKEN is required")
        }
        guard let note = parsed.value("--note"), !note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw UsageError(command: "bind", message: "--note TEXT is required (why: a ticket number)")
        }
        let configuration = try context.loadConfiguration(parsed)
        let orderId = parsed.positionals[0]
        let bound: BoundOrder
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            bound = try ledger.bind(orderId: orderId, accountToken: token, note: note, replace: parsed.has("--replace"),
                                    binding: configuration.userBinding,
                                    by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        context.print("bound \(bound.fingerprint) to \(orderId)"
                      + (bound.replacedFingerprint.map { " (replacing \($0))" } ?? "") + ": pending, due now")
    }
}
