import SettleBase
import SettleModel
import SettleLedger

/// `settle report [--since T] [--json]`: what settle recovered (goods the backend had not
/// granted and settle did) and clawed back (goods taken back on refunds), by currency, store and
/// UTC day, and how many orders had no price (issue 37). Read-only.
enum ReportCommand {
    static let spec = ArgumentSpec(command: "report", options: [
        .init(name: "--since", takesValue: true), .init(name: "--json", takesValue: false),
    ])

    static let help = """
    Usage: settle report [--since T] [--json]

    What settle recovered and clawed back since T (default 30d), by currency, store and UTC day.
    Recovered: orders whose purchase settle's delivery hook granted (the backend had not: it
    enqueued the order and never granted it, or never saw the purchase, which a store's
    notification or history brought). Clawed back: orders whose goods settle's revoke hook took
    back after a refund. Each amount is the order's price: the store's (a signed transaction's
    price and currency), else the configuration's prices, else none (counted "without a price",
    never guessed). Currencies are never added together. Read-only.

      --since T  from T: \(AuditView.sinceForms)
      --json     one JSON object: since, until, and for recovered and clawed_back: orders,
                 without_price, by_currency [{currency, orders, amount_milliunits, amount}] and
                 by_day [{day, store, currency, orders, amount_milliunits, amount}]
    """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let now = context.time.unixSeconds
        let text = parsed.value("--since") ?? "30d"
        guard let since = AuditView.since(text, now: now), since <= now else {
            throw UsageError(command: "report",
                             message: "--since takes \(AuditView.sinceForms) in the past, got '\(text)'")
        }
        let configuration = try context.loadConfiguration(parsed)
        let report: RevenueReport
        do {
            let ledger = try configuration.openLedger(.readOnly, time: context.time)
            report = try ledger.revenue(since: since, until: now + 1)
        } catch {
            throw CommandFailure.from(error)
        }
        context.print(parsed.has("--json") ? RevenueView.json(report).serialized() : RevenueView.text(report))
    }
}
