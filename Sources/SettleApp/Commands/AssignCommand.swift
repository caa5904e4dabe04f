import SettleModel
import SettleConfig
import SettleEngine

/// `settle assign ORDER_ID --user USER_ID [--note TEXT]`: gives a purchase Apple reported, that
/// no backend enqueued and nothing mapped to a user (`unclaimed_purchase`), to its buyer.
enum AssignCommand {
    static let spec = ArgumentSpec(command: "assign", options: [.init(name: "--user", takesValue: true),
                                                                .init(name: "--note", takesValue: true)],
                                   positionals: 1...1)

    static var help: String {
        """
        Usage: settle assign ORDER_ID --user USER_ID [--note TEXT]

        \(StoreNames.wrap("For an order in needs_attention with reason unclaimed_purchase (a store reported a purchase that "
            + "no backend enqueued and that maps to no user: \(StoreNames.help("account_id")); or a backend wrote the order "
            + "with an empty user_id): records USER_ID as its buyer and puts it back to pending, due now. It is then verified "
            + "like any order, user binding included, and delivered through the hook. Exit 65 for any other order."))

        \(StoreNames.wrap(StoreNames.sentences("assign")))
        """
    }

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard let user = parsed.value("--user"), !user.isEmpty else {
            throw UsageError(command: "assign", message: "--user USER_ID is required")
        }
        let configuration = try context.loadConfiguration(parsed)
        let orderId = parsed.positionals[0]
        var setting: (token: String, notice: String)? = nil
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            if let record = try ledger.orderRecord(orderId) {
                setting = tokenToSet(for: record.order, user: user, configuration: configuration, modules: context.modules)
            }
            try ledger.assign(orderId: orderId, userId: user, note: parsed.value("--note"), accountToken: setting?.token,
                              by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        context.print("assigned \(orderId) to user \(user): pending, due now")
        if let setting { context.print(setting.notice) }
    }

    /// The account token the order's store sets once the assigned purchase is verified as the
    /// user's (`StoreModule.tokenToSet`), with the line that says so.
    static func tokenToSet(for order: Order, user: String, configuration: Configuration,
                           modules: [any StoreModule.Type] = StoreModules.all) -> (token: String, notice: String)? {
        modules.first { $0.descriptor.store == order.store }?.tokenToSet(assigning: order, to: user, configuration)
    }
}
