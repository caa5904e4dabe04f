import SettleModel
import SettleLedger

/// `settle status [ORDER_ID] [--state S] [--user U] [--transaction T] [--json] [--limit N]`:
/// a read-only view of the ledger. Opens the ledger read-only and takes no lock.
enum StatusCommand {
    static let spec = ArgumentSpec(command: "status", options: [
        .init(name: "--state", takesValue: true), .init(name: "--user", takesValue: true),
        .init(name: "--transaction", takesValue: true), .init(name: "--json", takesValue: false),
        .init(name: "--limit", takesValue: true), .init(name: "--app-account-token", takesValue: true),
        .init(name: "--notification", takesValue: true), .init(name: "--refunded", takesValue: false),
        .init(name: "--purchase-token-file", takesValue: true), .init(name: "--check", takesValue: false),
    ], positionals: 0...1)

    static var help: String { """
    Usage: settle status [ORDER_ID] [--state STATE] [--user USER] [--transaction TXN]
                         [--app-account-token UUID] [--json] [--limit N]

    Shows counts by state, the oldest undelivered order's age and the matching orders (most
    recently changed first); with --user, --transaction or --app-account-token the counts are
    of those orders only; without, a refunds: line names the customers with
    refunds.flag_after refunds or more in 90 days. With ORDER_ID, starts with a verdict in plain words (charged?
    delivered? why? what next?), then the order's full record and every verification and
    delivery attempt. Read-only: never writes, never takes the daemon's lock.

      --state STATE      pending, verifying, delivering, finished, rejected or needs_attention
      --user USER        orders of this user id, then the customer: every order they
                         bought, hold, gave away or received, and their refunds in the
                         last 90 days (what the grant hook is told as refunds_90d)
      --transaction TXN  \(StoreNames.wrap("orders with this transaction or order id: \(StoreNames.help("transaction")); "
        + "\(StoreNames.help("order_lookup", "and")): whose purchase it is, and the orders holding its purchase token",
        column: 21, indent: 21))
      --app-account-token UUID
                         orders whose backend stored this StoreKit appAccountToken
      --purchase-token-file FILE|-
                         orders with the purchase token in FILE (or standard
                         input); the token is never printed, only its fingerprint
      --limit N          list at most N orders (default 50)
      --refunded         \(StoreNames.wrap("only orders " + StoreNames.help("refunded"), column: 21, indent: 21))
      --notification UUID  one App Store Server Notification: type, transaction, order, outcome
      --json             print JSON (its fields: docs/commands.md) instead of text
      --check            whether settle is working, for a monitor: each thing wrong
                         (a store's breaker open, no daemon running, its last pass late,
                         a store's alert) on a line of its own, exit 69; else OK, exit 0
    """
    }

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
        filter.appAccountToken = parsed.value("--app-account-token")
        filter.refunded = parsed.has("--refunded")
        filter.purchaseToken = try parsed.value("--purchase-token-file").map { (path) throws(CommandFailure) in
            try EnqueueCommand.readPurchaseToken(path)
        }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try configuration.openLedger(.readOnly, time: context.time)
            if let uuid = parsed.value("--notification") {
                guard let record = try ledger.notification(uuid: uuid) else {
                    throw CommandFailure(.dataError, "no notification \(uuid) in the ledger")
                }
                context.print(parsed.has("--json") ? StatusView.json(record).serialized(pretty: true) : StatusView.text(record))
                return
            }
            if let orderId = parsed.positionals.first {
                guard let report = try OrderReport.read(ledger, orderId: orderId) else {
                    throw CommandFailure(.dataError, "no order \(orderId) in the ledger")
                }
                let now = context.time.unixSeconds
                context.print(parsed.has("--json") ? report.json(now: now).serialized(pretty: true) : report.text(now: now))
                return
            }
            let report = try StatusReport.read(ledger, filter: filter, configuration: configuration, time: context.time)
            if parsed.has("--check") {
                let check = StatusCheck(report, configuration: configuration, now: context.time.unixSeconds)
                guard check.isHealthy else { throw CommandFailure(.unavailable, check.text) }
                return context.print(check.text)
            }
            let now = context.time.unixSeconds
            // With --user, the customer view after the list: what they bought, hold, gave away or received.
            let customer = try filter.userId.map { try CustomerReport.read(ledger, userId: $0, configuration: configuration, now: now) }
            let policy = try filter.userId.map { try CustomerPolicyView.read(ledger, userId: $0) }
            if parsed.has("--json") {
                var json = report.json
                if let customer, case var .object(members) = json {
                    members.append(("customer", policy?.adding(to: customer.json) ?? customer.json))
                    json = .object(members)
                }
                context.print(json.serialized(pretty: true))
            } else {
                context.print(report.text(now: now) + (customer.map { "\n" + $0.text(now: now) } ?? "")
                              + (policy.map { "\n" + $0.text } ?? ""))
            }
        } catch let error as LedgerError {
            throw CommandFailure.from(error)
        }
    }
}
