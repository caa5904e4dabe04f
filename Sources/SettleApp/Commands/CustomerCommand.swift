import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleLedger

/// `settle customer set|show|usage`: a backend or a person records a customer's consent to share
/// their data with the store and the developer's refund preference for them, and what is known of
/// an order's use; settle's answers to the stores' refund requests use them (docs/backend.md).
enum CustomerCommand {
    static let spec = ArgumentSpec(
        command: "customer",
        options: [
            .init(name: "--consented", takesValue: true), .init(name: "--refund-preference", takesValue: true),
            .init(name: "--note", takesValue: true), .init(name: "--json", takesValue: false),
            .init(name: "--consumption-percentage", takesValue: true),
            .init(name: "--play-time-seconds", takesValue: true),
            .init(name: "--ip-address", takesValue: true), .init(name: "--region-code", takesValue: true),
            .init(name: "--administrative-area", takesValue: true), .init(name: "--locality", takesValue: true),
            .init(name: "--events-file", takesValue: true),
        ], positionals: 2...2)

    static let help = """
        Usage: settle customer set USER [--consented yes|no] [--refund-preference P|none] [--note TEXT]
               settle customer show USER [--json]
               settle customer usage ORDER_ID [--consumption-percentage MILLIUNITS] [--play-time-seconds S]
                                     [--ip-address IP] [--region-code CC [--administrative-area A] [--locality L]]
                                     [--events-file FILE|-]

        set records a customer's refund policy: whether they consented to their data being shared
        with the store, and the developer's refund preference for them (decline, grant_full,
        grant_prorated, neutral; none forgets it and the global setting answers again). Audited.

        show prints the record and the global settings it overrides.

        usage records what is known of one order's use: the consumption percentage in thousandths
        of a percent (45200 is 45.2 %), the play time, where it was used (IP address, CLDR region
        code, region, city) and usage events, a JSON array of {"time": RFC 3339, "description": text}
        (at most 100). Sent to the store only when the customer consented; unknown stays unsent.
        Fields given replace the stored ones; the rest stay. Audited.

        Exit 65 when a value is out of range or the order is unknown.
        """

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        let (action, subject) = (parsed.positionals[0], parsed.positionals[1])
        switch action {
        case "set": try set(context, parsed, user: subject)
        case "show": try show(context, parsed, user: subject)
        case "usage": try usage(context, parsed, order: subject)
        default: throw UsageError(command: "customer", message: "unknown action '\(action)' (set, show or usage)")
        }
    }

    /// A `CustomerInput` problem is bad data: exit 65, naming the option.
    static func checked<T>(_ body: () throws(CustomerInput.Problem) -> T) throws(CommandFailure) -> T {
        do { return try body() } catch {
            throw CommandFailure(
                .dataError, "--\(error.field.replacingOccurrences(of: "_", with: "-")): \(error.message)")
        }
    }

    static func set(_ context: CommandContext, _ parsed: ParsedArguments, user: String) throws {
        let user = try checked { () throws(CustomerInput.Problem) in try CustomerInput.userId(user) }
        var change = CustomerChange()
        if let text = parsed.value("--consented") {
            switch text {
            case "yes": change.consented = true
            case "no": change.consented = false
            default:
                throw UsageError(
                    command: "customer", message: "--consented takes yes or no, not '\(PrintableText.clip(text, 20))'")
            }
        }
        if let text = parsed.value("--refund-preference") {
            if text == "none" {
                change.clearsPreference = true
            } else {
                change.refundPreference = try checked { () throws(CustomerInput.Problem) in
                    try CustomerInput.preference(text)
                }
            }
        }
        if let text = parsed.value("--note") {
            change.note = try checked { () throws(CustomerInput.Problem) in try CustomerInput.note(text) }
        }
        guard !change.isEmpty else {
            throw UsageError(
                command: "customer", message: "say what to record: --consented, --refund-preference or --note")
        }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            let policy = try ledger.setCustomer(
                user, change, source: .cli, by: Operator.commandLine(environment: context.environment))
            context.print(
                "customer \(user): consent \(policy.consentText), refund preference "
                    + (policy.refundPreference?.rawValue ?? "none (the global setting answers)"))
        } catch {
            throw CommandFailure.from(error)
        }
    }

    static func show(_ context: CommandContext, _ parsed: ParsedArguments, user: String) throws {
        let configuration = try context.loadConfiguration(parsed)
        let policy: CustomerPolicy?
        do {
            policy = try configuration.openLedger(.existing, time: context.time).customerPolicy(userId: user)
        } catch {
            throw CommandFailure.from(error)
        }
        let view = CustomerPolicyView(userId: user, policy: policy)
        context.print(parsed.has("--json") ? view.json.serialized(pretty: true) : view.text)
    }

    static func usage(_ context: CommandContext, _ parsed: ParsedArguments, order: String) throws {
        var usage = OrderUsage(orderId: order)
        try checked { () throws(CustomerInput.Problem) in
            if let text = parsed.value("--consumption-percentage") {
                guard let value = Int64(text) else {
                    throw CustomerInput.Problem(
                        "consumption_percentage", "'\(PrintableText.clip(text, 20))' is not a whole number")
                }
                usage.consumptionMilliunits = try CustomerInput.milliunits(value)
            }
            if let text = parsed.value("--play-time-seconds") {
                guard let value = Int64(text) else {
                    throw CustomerInput.Problem(
                        "play_time_seconds", "'\(PrintableText.clip(text, 20))' is not a whole number")
                }
                usage.playTimeSeconds = try CustomerInput.playTime(value)
            }
            if let text = parsed.value("--ip-address") { usage.ipAddress = try CustomerInput.ipAddress(text) }
            if let code = parsed.value("--region-code") {
                usage.location = try CustomerInput.location(
                    regionCode: code, administrativeArea: parsed.value("--administrative-area"),
                    locality: parsed.value("--locality"))
            }
        }
        if let file = parsed.value("--events-file") {
            let text = try EnqueueCommand.read(file, what: "usage events", keepingInnerSpace: true)
            guard let json = try? JSONValue.parse(Data(text.utf8)) else {
                throw CommandFailure(.dataError, "--events-file: \(file) is not JSON")
            }
            usage.events = try checked { () throws(CustomerInput.Problem) in
                try CustomerInput.events(json, field: "events_file")
            }
        }
        guard !usage.isEmpty else {
            throw UsageError(command: "customer", message: "say what is known of the order's use (see --help)")
        }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try configuration.openLedger(.current, time: context.time)
            let stored = try ledger.setOrderUsage(
                usage, source: .cli, by: Operator.commandLine(environment: context.environment))
            context.print("order \(order): \(stored.summary)")
        } catch {
            throw CommandFailure.from(error)
        }
    }
}
