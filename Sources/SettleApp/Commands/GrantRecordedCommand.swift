import SettleLedger

/// `settle grant-recorded --transaction T`: a backend says it granted a purchase itself, so
/// settle never delivers it again and matching moves past it.
enum GrantRecordedCommand {
    static let spec = ArgumentSpec(command: "grant-recorded", options: [
        .init(name: "--transaction", takesValue: true), .init(name: "--original-transaction", takesValue: true),
        .init(name: "--product", takesValue: true), .init(name: "--note", takesValue: true),
    ])

    static var help: String { """
    Usage: settle grant-recorded --transaction TXN [--original-transaction TXN] [--product PRODUCT]
                                 [--note TEXT]

    \(StoreNames.wrap("Records that your backend granted this purchase itself (its own purchase flow): TXN is "
        + "\(StoreNames.help("transaction")). settle never delivers it again, and an order without a transaction id moves on "
        + "to the next purchase of its receipt. For a non-consumable, give --product and --original-transaction: what is "
        + "granted once is the original purchase (a restore has a new transaction id). "
        + StoreNames.sentences("grant_recorded")))
    Exit 0 when recorded or already recorded; 65 when settle itself granted the transaction to
    an order (the customer may then have received it twice: check that order).
    """
    }

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        guard let transaction = parsed.value("--transaction"), !transaction.isEmpty else {
            throw UsageError(command: "grant-recorded", message: "missing required option '--transaction'")
        }
        guard transaction.count <= 64 else {
            throw CommandFailure(.dataError, "--transaction: '\(transaction.prefix(64))' is not \(StoreNames.help("transaction"))")
        }
        let configuration = try context.loadConfiguration(parsed)
        var key = transaction
        if let product = parsed.value("--product") {
            guard let kind = configuration.products[product]?.kind else {
                throw CommandFailure(.dataError, "--product: \(product) is not in the configuration's products")
            }
            if kind == .nonConsumable {
                guard let original = parsed.value("--original-transaction"), !original.isEmpty else {
                    throw UsageError(command: "grant-recorded",
                                     message: "a non-consumable is granted once per original purchase: give --original-transaction")
                }
                key = original
            }
        }
        let result: OutsideGrantResult
        do {
            let ledger = try configuration.openLedger(.existing, time: context.time)
            result = try ledger.recordOutsideGrant(transactionId: transaction, grantKey: key, note: parsed.value("--note"))
        } catch {
            throw CommandFailure.from(error)
        }
        switch result {
        case .recorded:
            context.print("recorded: transaction \(transaction) was granted outside settle" + (key == transaction ? "" : " (grant key \(key))"))
        case .alreadyRecorded:
            context.print("transaction \(transaction) was already recorded as granted outside settle; nothing changed")
        case let .grantedBySettle(orderId):
            throw CommandFailure(.dataError, "transaction \(transaction) was granted by settle to order \(orderId); if your backend granted it too, the customer received it twice (settle status \(orderId))")
        }
    }
}
