/// `settle retry ORDER_ID... [--note TEXT]`: hands orders back to the machine.
enum RetryCommand {
    static let spec = ArgumentSpec(command: "retry", options: [.init(name: "--note", takesValue: true)],
                                   positionals: 1...1000)

    static let help = """
    Usage: settle retry ORDER_ID... [--note TEXT]

    Puts needs_attention or rejected orders back to pending, due now, with the attempt counter
    reset. The note goes into each order's history. All or nothing: if any named order is
    unknown or in another state, nothing changes (exit 65).
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try Ledger(path: configuration.ledgerPath, time: context.time)
            try ledger.retry(orderIds: parsed.positionals, note: parsed.value("--note"))
        } catch {
            throw CommandFailure.from(error)
        }
        context.print("retrying \(parsed.positionals.joined(separator: ", ")): pending, due now")
    }
}
