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
        .init(name: "--purchase-token-file", takesValue: true),
    ], positionals: 0...1)

    static let help = """
    Usage: settle status [ORDER_ID] [--state STATE] [--user USER] [--transaction TXN]
                         [--app-account-token UUID] [--json] [--limit N]

    Shows counts by state, the oldest undelivered order's age and the matching orders (most
    recently changed first); with --user, --transaction or --app-account-token the counts are
    of those orders only. With ORDER_ID, starts with a verdict in plain words (charged?
    delivered? why? what next?), then the order's full record and every verification and
    delivery attempt. Read-only: never writes, never takes the daemon's lock.

      --state STATE      pending, verifying, delivering, finished, rejected or needs_attention
      --user USER        orders of this user id
      --transaction TXN  orders with this Apple transaction id (or original transaction id), or
                         this Google Play order id (GPA....); an Apple order id from the
                         customer's receipt email (e.g. MQ5Q8W3X2Z) is looked up with Apple
                         first (Look Up Order ID; needs server_api), a Google order id with
                         Google (orders.get; needs google_play): whose purchase it is, and the
                         orders holding its purchase token
      --app-account-token UUID
                         orders whose backend stored this StoreKit appAccountToken
      --purchase-token-file FILE|-
                         Google Play orders with the purchase token in FILE (or standard
                         input); the token is never printed, only its fingerprint
      --limit N          list at most N orders (default 50)
      --refunded         only orders refunded or revoked (Apple) or voided (Google Play)
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
                guard let record = try ledger.orderRecord(orderId) else {
                    throw CommandFailure(.dataError, "no order \(orderId) in the ledger")
                }
                let notifications = try ledger.notifications(orderId: orderId)
                let revoke = try ledger.revocation(orderId: orderId)
                let finish = try ledger.appleFinish(orderId: orderId)
                let actions = try ledger.supportActions(orderId: orderId)
                if parsed.has("--json") {
                    var json = StatusView.json(record.order, history: record.history, notifications: notifications,
                                               revoke: revoke, appleFinish: finish)
                    if case var .object(members) = json {
                        members.append(("support_actions", .array(actions.map(StatusView.json))))
                        json = .object(members)
                    }
                    context.print(json.serialized(pretty: true))
                } else {
                    context.print(StatusView.text(record.order, history: record.history, notifications: notifications,
                                                  now: context.time.unixSeconds, revoke: revoke, appleFinish: finish)
                                  + StatusView.text(actions, now: context.time.unixSeconds))
                }
                return
            }
            var appleOrder: AppleOrderLookup.Result?
            if let id = filter.transactionId, AppleOrderLookup.isOrderId(id),
               let lookup = try AppleOrderLookup.configured(configuration, time: context.time) {
                appleOrder = lookup.lookUp(id)
                if case let .found(_, _, purchases) = appleOrder {
                    filter.transactionIds = purchases.flatMap { [$0.transactionId, $0.originalTransactionId] }
                }
            }
            var googleOrder: GooglePlayOrderLookup.Result?
            if let id = filter.transactionId, GooglePlayOrderLookup.isOrderId(id),
               let lookup = try GooglePlayOrderLookup.configured(configuration, time: context.time) {
                googleOrder = lookup.lookUp(id)
                if case let .found(order, _) = googleOrder {
                    filter.googleOrder = GoogleOrderMatch(orderId: order.orderId, token: order.purchaseToken)
                }
            }
            let summary = try ledger.summary(filter)
            let breakers = try ledger.breakers()
            let daemon = try ledger.daemonRecord()
            // A shared ledger has as many daemons as hosts run: each is listed with its heartbeat.
            let workers = ledger.isShared ? try ledger.liveDaemons() : nil
            let finishesRefused = try ledger.refusedAppleFinishes()
            // Buckets a host saved within the live window: a stopped host's are left out.
            let pacer = StatusView.pacedBuckets(try ledger.pacerBuckets(since: context.time.unixSeconds - PostgresLedger.liveWindowSeconds))
            if parsed.has("--json") {
                var json = StatusView.json(summary, breakers: breakers, daemon: daemon)
                if case var .object(members) = json {
                    members.append(("apple_finishes_refused", .number(finishesRefused)))
                    members.append(("pacer", StatusView.json(pacer: pacer, summary: summary)))
                    json = .object(members)
                }
                if let appleOrder, case var .object(members) = json {
                    members.insert(("apple_order", StatusView.json(appleOrder)), at: 0)
                    json = .object(members)
                }
                if let googleOrder, case var .object(members) = json {
                    members.insert(("google_play_order", StatusView.json(googleOrder, held: summary.matching)), at: 0)
                    json = .object(members)
                }
                if let workers, case var .object(members) = json {
                    members.append(("workers", StatusView.json(workers: workers)))
                    json = .object(members)
                }
                context.print(json.serialized(pretty: true))
            } else {
                if let appleOrder { context.print(StatusView.text(appleOrder)) }
                if let googleOrder { context.print(StatusView.text(googleOrder, held: summary.matching)) }
                context.print(StatusView.text(summary, breakers: breakers, daemon: daemon, pacer: pacer, now: context.time.unixSeconds))
                if finishesRefused > 0 {
                    // The orders are finished; StoreKit may still offer these transactions to the app.
                    context.print("App Store: Apple refused Finish Transaction for \(finishesRefused) finished orders "
                                  + "(settle status ORDER shows why)")
                }
                if let workers { context.print(StatusView.text(workers: workers, now: context.time.unixSeconds)) }
            }
        } catch let error as LedgerError {
            throw CommandFailure.from(error)
        }
    }
}
