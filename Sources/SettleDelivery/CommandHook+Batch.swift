import Foundation
import SettleBase
import SettleModel

/// Batch delivery (`delivery.batch_size` > 1): one run of the delivery command gets several
/// orders, one JSON payload a line on standard input, and answers one JSON line per order on
/// standard output:
///
///     {"idempotency_key": "2000000123456789", "result": "delivered"}
///     {"idempotency_key": "2000000123456790", "result": "already_granted"}
///     {"idempotency_key": "2000000123456791", "result": "retry", "message": "wallet service down"}
///
/// `result` is `delivered`, `already_granted`, `retry` or `refused`, each meaning what exit 0,
/// 80, 75 and 65 mean for one order. The exactly-once contract is per order, as always: an order
/// is finished only on its own `delivered` line. An order without an answer line is decided by
/// the exit code as for one order, except that exit 0 without its line is retried as unconfirmed
/// (the key is the same, so the receiver's idempotency makes that safe; when the attempts run
/// out, `needs_attention` `hook_unconfirmed`). Other output lines are kept in the
/// history. One process per batch instead of one per order is the point: a process start costs
/// more than most grants.
///
/// A command configured for batches gets every grant this way, a batch of one included (and a
/// grant `settle transfer` or `settle redeliver` sends): it answers with lines and may exit 0
/// whatever its lines say, so its exit code alone must never finish an order.
extension CommandHook {
    package func deliver(batch: [(order: Order, purchase: VerifiedPurchase)]) -> [DeliveryReport] {
        guard batchSize > 1 else { return batch.map { deliver(order: $0.order, purchase: $0.purchase) } }
        return run(lines: batch.map { item in
            (HookPayload.make(order: item.order, purchase: item.purchase, product: products[item.purchase.productId]),
             HookPayload.idempotencyKey(item.purchase))
        })
    }

    /// One run of the command with `lines` (each document and its idempotency key), one report
    /// a line, in order: each order decided by its own answer line.
    func run(lines: [(document: JSONValue, key: String)]) -> [DeliveryReport] {
        var environment = environment(orderId: "", idempotencyKey: "")
        environment["SETTLE_ORDER_ID"] = nil
        environment["SETTLE_IDEMPOTENCY_KEY"] = nil
        environment["SETTLE_BATCH"] = String(lines.count)
        let input = lines.map { $0.document.serialized() + "\n" }.joined()
        let started = DispatchTime.now()
        let result: SubprocessResult
        do {
            // Room for every answer line and some words besides.
            result = try Subprocess.run(arguments: arguments, environment: environment, standardInput: Data(input.utf8),
                                        timeout: timeoutSeconds, outputLimit: CommandHook.outputLimit + 512 * lines.count)
        } catch {
            let ms = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
            let message = HookFault.cannotStart + "\(error)"
            let unusable = error.programUnusable
            return lines.map { _ in DeliveryReport(outcome: unusable ? .cannotStart(message) : .retry(message), exitCode: nil,
                                                   output: "", durationMs: ms) }
        }
        let ms = Int(result.duration * 1000)
        var answers: [String: (result: String, message: String?)] = [:]
        var other: [Substring] = []
        for line in result.output.split(separator: "\n") {
            if line.hasPrefix("{"), let json = try? JSONValue.parse(Data(line.utf8)),
               let key = json["idempotency_key"]?.looseString, let answer = json["result"]?.looseString {
                answers[key] = (answer, json["message"]?.looseString)
            } else {
                other.append(line)
            }
        }
        let said = String(other.joined(separator: "\n").suffix(CommandHook.outputLimit - 64))
        return lines.map { line in
            let key = line.key
            let whole = DeliveryReport(outcome: .retry(""), exitCode: nil, output: said, durationMs: ms)
            guard let answer = answers[key] else { return unanswered(result, output: said, durationMs: ms) }
            var report = whole
            let why = answer.message.map { ": \($0)" } ?? ""
            switch answer.result {
            case "delivered": report.outcome = .delivered
            case "already_granted": report.outcome = .alreadyGranted("hook answered that this purchase was granted before\(why)")
            case "retry": report.outcome = .retry("hook asked to try again later\(why)")
            case "refused": report.outcome = .refused("hook refused the delivery permanently\(why)")
            default: report.outcome = .retry("hook answered an unknown result '\(answer.result.prefix(40))'\(why)")
            }
            report.exitCode = exitCode(result.termination)
            return report
        }
    }

    /// An order the batch gave no answer line for: its exit code decides, and a clean exit
    /// without the line is retried (the hook did not say it granted).
    private func unanswered(_ result: SubprocessResult, output: String, durationMs: Int) -> DeliveryReport {
        let outcome: DeliveryOutcome
        switch result.termination {
        case .exited(0): outcome = .unconfirmed("hook exited 0 without an answer line for this order")
        case .exited(75): outcome = .retry("hook asked to try again later (exit 75)")
        case .exited(65): outcome = .refused("hook refused the batch permanently (exit 65)")
        case .exited(CommandHook.alreadyGrantedExit):
            outcome = .retry("hook exited 80 for a batch without an answer line for this order")
        case let .exited(code): outcome = .retry("hook failed (exit \(code))")
        case let .signaled(signal): outcome = .retry("hook was killed by signal \(signal)")
        case .timedOut: outcome = .retry("hook ran past its \(Self.format(timeoutSeconds)) s timeout and was killed with its process group")
        }
        var report = DeliveryReport(outcome: outcome, exitCode: exitCode(result.termination), output: output, durationMs: durationMs)
        if case .timedOut = result.termination { report.timedOut = true }
        return report
    }

    private func exitCode(_ termination: SubprocessResult.Termination) -> Int? {
        if case let .exited(code) = termination { return Int(code) }
        return nil
    }
}
