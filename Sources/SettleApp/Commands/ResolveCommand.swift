import Foundation
import SettleModel

/// `settle resolve ORDER_ID... --as granted_by_hand|wont_grant --note TEXT`: closes orders
/// settle cannot settle, so they leave `needs_attention` and the alerts.
enum ResolveCommand {
    static let spec = ArgumentSpec(command: "resolve", options: [
        .init(name: "--as", takesValue: true), .init(name: "--note", takesValue: true),
        .init(name: "--transaction", takesValue: true),
    ], positionals: 1...1000)

    static let help = """
    Usage: settle resolve ORDER_ID... --as granted_by_hand|wont_grant --note TEXT [--transaction TXN]

    Closes needs_attention or rejected orders by hand; settle never delivers them afterwards.

      --as granted_by_hand  support granted the goods another way. An order that holds its
                            store's grant becomes finished; any other becomes rejected, and its
                            transaction is recorded as granted outside settle. Either way the
                            purchase is never delivered again, even if it is uploaded again.
                            The reason is granted_by_hand.
      --transaction TXN     with granted_by_hand, for one order that names no transaction: the
                            \(StoreNames.wrap("store transaction that was granted by hand (\(StoreNames.help("transaction")); "
        + "required then)", column: 24, indent: 24))
      --as wont_grant       nothing will be granted: rejected, reason wont_grant. A purchase the
                            order holds stays reserved by it.
      --note TEXT           required: why, and who asked (a ticket number); kept in the history

    All or nothing: if any named order is unknown or in another state, nothing changes (exit 65).
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard let name = parsed.value("--as") else {
            throw UsageError(command: "resolve", message: "--as is required (granted_by_hand or wont_grant)")
        }
        guard let resolution = Resolution(rawValue: name) else {
            throw UsageError(command: "resolve", message: "--as must be granted_by_hand or wont_grant, got '\(name)'")
        }
        guard let note = parsed.value("--note"), !note.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw UsageError(command: "resolve", message: "--note is required: say why (a ticket number)")
        }
        let configuration = try context.loadConfiguration(parsed)
        let resolved: [(String, OrderState)]
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            resolved = try ledger.resolve(orderIds: parsed.positionals, as: resolution, note: note,
                                          transaction: parsed.value("--transaction"), by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        for (id, state) in resolved { context.print("resolved \(id): \(state.rawValue) (\(resolution.rawValue))") }
    }
}
