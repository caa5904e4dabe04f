import SettleModel
import SettleConfig

/// `settle assign ORDER_ID --user USER_ID [--note TEXT]`: gives a purchase Apple reported, that
/// no backend enqueued and nothing mapped to a user (`unclaimed_purchase`), to its buyer.
enum AssignCommand {
    static let spec = ArgumentSpec(command: "assign", options: [.init(name: "--user", takesValue: true),
                                                                .init(name: "--note", takesValue: true)],
                                   positionals: 1...1)

    static let help = """
    Usage: settle assign ORDER_ID --user USER_ID [--note TEXT]

    For an order in needs_attention with reason unclaimed_purchase (a store reported a purchase
    that no backend enqueued and that maps to no user: Apple's appAccountToken, or Google Play's
    obfuscatedExternalAccountId; or a backend wrote the order with an empty user_id): records
    USER_ID as its buyer and puts it back to pending, due now. It is then verified like any
    order, user binding included, and delivered through the hook. Exit 65 for any other order.

    For an App Store purchase, when users have tokens (user_binding.app_account_token "user_id"
    with a UUID user id, or "uuid5") and server_api is configured: once the pass has verified
    the purchase as USER_ID's, settle asks Apple to set the user's appAccountToken on it (Set
    App Account Token), so its renewals and Apple's notifications of them bind by themselves.
    The outcome is in the order's history (settle status ORDER_ID): account_token_set, or
    account_token_refused with Apple's error (4000185: a family member's shared purchase, which
    takes no token; settle link binds those); temporary failures are retried up to
    schedule.max_attempts. A failure never undoes the assignment.
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard let user = parsed.value("--user"), !user.isEmpty else {
            throw UsageError(command: "assign", message: "--user USER_ID is required")
        }
        let configuration = try context.loadConfiguration(parsed)
        let orderId = parsed.positionals[0]
        var token: String? = nil
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            if let record = try ledger.orderRecord(orderId) {
                token = accountToken(for: record.order, user: user, configuration: configuration)
            }
            try ledger.assign(orderId: orderId, userId: user, note: parsed.value("--note"), accountToken: token,
                              by: Operator.commandLine(environment: context.environment))
        } catch {
            throw CommandFailure.from(error)
        }
        context.print("assigned \(orderId) to user \(user): pending, due now")
        if let token {
            context.print("once the purchase is verified as theirs, Apple is asked to set appAccountToken \(token) on it "
                          + "(Set App Account Token), so its renewals bind by themselves")
        }
    }

    /// The token to set on an App Store purchase with Set App Account Token: the user's own, when
    /// the binding gives users one (`user_id` with a UUID user id, or `uuid5`) and `server_api`
    /// is there to call. A token the order carries (`order`) is Apple's, not the user's: none.
    static func accountToken(for order: Order, user: String, configuration: Configuration) -> String? {
        guard order.store == .appStore, configuration.serverAPI != nil,
              [.userId, .uuid5].contains(configuration.userBinding.tokenSource) else { return nil }
        var assigned = order
        assigned.userId = user
        return configuration.userBinding.expectedToken(for: assigned)
    }
}
