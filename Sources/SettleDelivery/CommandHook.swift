import Foundation
import SettleBase
import SettleModel
import SettleConfig

/// Runs the operator's delivery command (SPEC section 5): no shell, the payload on stdin,
/// a clean environment with `SETTLE_ORDER_ID` and `SETTLE_IDEMPOTENCY_KEY`, killed with its
/// whole process group past the timeout.
package struct CommandHook: Deliverer {
    package var arguments: [String]
    package var timeoutSeconds: Double
    package var products: [String: Configuration.Product]
    /// settle's own environment. The hook gets only `PATH`, `LANG`, `TZ` and the names in
    /// `passedThrough` from it: the rest (`CREDENTIALS_DIRECTORY`, proxy credentials, systemd's
    /// notify socket) belongs to settle, and a hook is often a script written in a hurry.
    package var baseEnvironment: [String: String]
    /// Variable names from `delivery.environment`.
    package var passedThrough: [String]
    /// `delivery.batch_size`: orders per run (see `CommandHook+Batch.swift`); 1 is one run per order.
    package var batchSize = 1

    /// Used when settle itself runs without a PATH (as under some init systems).
    package static let defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// The exit code that answers "this purchase was granted before, outside settle" (see the
    /// README's hook contract). Outside the sysexits range and the shell's own codes.
    package static let alreadyGrantedExit: Int32 = 80

    /// History keeps at most this many bytes of the hook's output, the cut marker included.
    package static let outputLimit = 4096

    package init(arguments: [String], timeoutSeconds: Double, products: [String: Configuration.Product],
                baseEnvironment: [String: String], passedThrough: [String] = []) {
        self.arguments = arguments
        self.timeoutSeconds = timeoutSeconds
        self.products = products
        self.baseEnvironment = baseEnvironment
        self.passedThrough = passedThrough
    }

    /// The hook's whole environment for one order.
    package func environment(orderId: String, idempotencyKey: String) -> [String: String] {
        var environment = ["PATH": baseEnvironment["PATH"] ?? Self.defaultPath]
        for name in ["LANG", "TZ"] + passedThrough {
            if let value = baseEnvironment[name] { environment[name] = value }
        }
        environment["SETTLE_ORDER_ID"] = orderId
        environment["SETTLE_IDEMPOTENCY_KEY"] = idempotencyKey
        environment["SETTLE_EXIT_ALREADY_GRANTED"] = String(CommandHook.alreadyGrantedExit)
        return environment
    }

    package func deliver(order: Order, purchase: VerifiedPurchase) -> DeliveryReport {
        // A command configured for batches speaks the batch contract to every grant.
        guard batchSize <= 1 else { return deliver(batch: [(order, purchase)])[0] }
        return run(HookPayload.make(order: order, purchase: purchase, product: products[purchase.productId]), orderId: order.orderId,
                   idempotencyKey: HookPayload.idempotencyKey(purchase))
    }

    package func send(_ document: JSONValue, orderId: String, idempotencyKey: String) -> DeliveryReport {
        guard batchSize <= 1 else { return run(lines: [(document, idempotencyKey)])[0] }
        return run(document, orderId: orderId, idempotencyKey: idempotencyKey)
    }

    /// Runs the command with `payload` on stdin and reads its answer (also for revokes).
    package func run(_ payload: JSONValue, orderId: String, idempotencyKey: String) -> DeliveryReport {
        let environment = environment(orderId: orderId, idempotencyKey: idempotencyKey)
        let started = DispatchTime.now()
        let result: SubprocessResult
        do {
            result = try Subprocess.run(arguments: arguments, environment: environment,
                                        standardInput: Data((payload.serialized() + "\n").utf8),
                                        timeout: timeoutSeconds, outputLimit: CommandHook.outputLimit - 32)
        } catch {
            let ms = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
            let message = HookFault.cannotStart + "\(error)"
            let unusable = (error as? SubprocessError)?.programUnusable == true
            return DeliveryReport(outcome: unusable ? .cannotStart(message) : .retry(message), exitCode: nil, output: "", durationMs: ms)
        }
        let ms = Int(result.duration * 1000)
        let outcome: DeliveryOutcome
        var exitCode: Int? = nil
        switch result.termination {
        case .exited(0):
            exitCode = 0
            outcome = .delivered
        case .exited(75):
            exitCode = 75
            outcome = .retry("hook asked to try again later (exit 75)")
        case .exited(65):
            exitCode = 65
            outcome = .refused("hook refused the delivery permanently (exit 65)")
        case .exited(CommandHook.alreadyGrantedExit):
            exitCode = Int(CommandHook.alreadyGrantedExit)
            outcome = .alreadyGranted("hook answered that this purchase was granted before (exit \(CommandHook.alreadyGrantedExit))")
        case let .exited(code):
            exitCode = Int(code)
            outcome = .retry("hook failed (exit \(code))")
        case let .signaled(signal):
            outcome = .retry("hook was killed by signal \(signal)")
        case .timedOut:
            outcome = .retry("hook ran past its \(Self.format(timeoutSeconds)) s timeout and was killed with its process group")
        }
        var report = DeliveryReport(outcome: outcome, exitCode: exitCode,
                                    output: result.output + (result.outputTruncated ? "\n[output cut to 4 KiB]" : ""), durationMs: ms)
        if case .timedOut = result.termination { report.timedOut = true }
        return report
    }

    package static func format(_ seconds: Double) -> String {
        seconds.rounded() == seconds ? String(Int(seconds)) : String(seconds)
    }
}
