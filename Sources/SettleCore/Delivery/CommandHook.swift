import Foundation

/// Runs the operator's delivery command (SPEC section 5): no shell, the payload on stdin,
/// `SETTLE_ORDER_ID` and `SETTLE_IDEMPOTENCY_KEY` in the environment, killed with its whole
/// process group past the timeout.
public struct CommandHook: Deliverer {
    public var arguments: [String]
    public var timeoutSeconds: Double
    public var products: [String: Configuration.Product]
    /// The environment the hook inherits (settle's own, minus nothing secret: secrets live in files).
    public var baseEnvironment: [String: String]

    /// The exit code that answers "this purchase was granted before, outside settle" (see the
    /// README's hook contract). Outside the sysexits range and the shell's own codes.
    public static let alreadyGrantedExit: Int32 = 80

    /// History keeps at most this many bytes of the hook's output, the cut marker included.
    public static let outputLimit = 4096

    public init(arguments: [String], timeoutSeconds: Double, products: [String: Configuration.Product],
                baseEnvironment: [String: String]) {
        self.arguments = arguments
        self.timeoutSeconds = timeoutSeconds
        self.products = products
        self.baseEnvironment = baseEnvironment
    }

    public func deliver(order: Order, purchase: VerifiedPurchase) -> DeliveryReport {
        let payload = HookPayload.make(order: order, purchase: purchase, product: products[purchase.productId])
        var environment = baseEnvironment
        // systemd's notify socket and watchdog belong to settle, not to its hook.
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { environment[name] = nil }
        environment["SETTLE_ORDER_ID"] = order.orderId
        environment["SETTLE_IDEMPOTENCY_KEY"] = HookPayload.idempotencyKey(purchase)
        environment["SETTLE_EXIT_ALREADY_GRANTED"] = String(CommandHook.alreadyGrantedExit)
        let started = DispatchTime.now()
        let result: SubprocessResult
        do {
            result = try Subprocess.run(arguments: arguments, environment: environment,
                                        standardInput: Data((payload.serialized() + "\n").utf8),
                                        timeout: timeoutSeconds, outputLimit: CommandHook.outputLimit - 32)
        } catch {
            let ms = Int((DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000)
            return DeliveryReport(outcome: .retry("hook could not start: \(error)"), exitCode: nil, output: "", durationMs: ms)
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
        return DeliveryReport(outcome: outcome, exitCode: exitCode,
                              output: result.output + (result.outputTruncated ? "\n[output cut to 4 KiB]" : ""), durationMs: ms)
    }

    static func format(_ seconds: Double) -> String {
        seconds.rounded() == seconds ? String(Int(seconds)) : String(seconds)
    }
}
