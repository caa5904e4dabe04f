/// `settle status [ORDER_ID] [--state S] [--user U] [--transaction T] [--json] [--limit N]`:
/// a read-only view of the ledger. Opens the ledger read-only and takes no lock.
enum StatusCommand {
    static let spec = ArgumentSpec(command: "status", options: [
        .init(name: "--state", takesValue: true), .init(name: "--user", takesValue: true),
        .init(name: "--transaction", takesValue: true), .init(name: "--json", takesValue: false),
        .init(name: "--limit", takesValue: true),
        .init(name: "--notification", takesValue: true), .init(name: "--refunded", takesValue: false),
    ], positionals: 0...1)

    static let help = """
    Usage: settle status [ORDER_ID] [--state STATE] [--user USER] [--transaction TXN] [--json] [--limit N]

    Shows counts by state, the oldest undelivered order's age and the matching orders (most
    recently changed first). With ORDER_ID, shows that order's full record and every
    verification and delivery attempt. Read-only: never writes, never takes the daemon's lock.

      --state STATE      pending, verifying, delivering, finished, rejected or needs_attention
      --user USER        orders of this user id
      --transaction TXN  orders with this Apple transaction id (or original transaction id)
      --limit N          list at most N orders (default 50)
      --refunded         only orders Apple refunded or revoked
      --notification UUID  one App Store Server Notification: type, transaction, order, outcome
      --json             print JSON (SPEC section 6) instead of text
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        var filter = OrderFilter()
        if let state = parsed.value("--state") {
            guard let value = OrderState(rawValue: state) else {
                throw UsageError(command: "status", message: "unknown state '\(state)' (one of: \(OrderState.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            filter.state = value
        }
        if let limit = parsed.value("--limit") {
            guard let n = Int(limit), n >= 0 else { throw UsageError(command: "status", message: "--limit needs a number, got '\(limit)'") }
            filter.limit = n
        }
        filter.userId = parsed.value("--user")
        filter.transactionId = parsed.value("--transaction")
        filter.refunded = parsed.has("--refunded")
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try Ledger(readOnlyPath: configuration.ledgerPath, time: context.time)
            if let uuid = parsed.value("--notification") {
                guard let record = try ledger.notification(uuid: uuid) else {
                    throw CommandFailure(.dataError, "no notification \(uuid) in the ledger")
                }
                context.print(parsed.has("--json") ? StatusView.json(record).serialized(pretty: true) : StatusView.text(record))
                return
            }
            if let orderId = parsed.positionals.first {
                guard let record = try ledger.orderRecord(orderId) else {
                    throw CommandFailure(.dataError, "no order \(orderId) in the ledger")
                }
                let notifications = try ledger.notifications(orderId: orderId)
                context.print(parsed.has("--json")
                              ? StatusView.json(record.order, history: record.history, notifications: notifications).serialized(pretty: true)
                              : StatusView.text(record.order, history: record.history, notifications: notifications))
                return
            }
            let summary = try ledger.summary(filter)
            let breaker = try ledger.appleBreaker()
            let daemon = try ledger.daemonRecord()
            context.print(parsed.has("--json") ? StatusView.json(summary, breaker: breaker, daemon: daemon).serialized(pretty: true)
                                               : StatusView.text(summary, breaker: breaker, daemon: daemon))
        } catch let error as LedgerError {
            throw CommandFailure.from(error)
        }
    }
}
