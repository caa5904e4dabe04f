import Foundation
import SettleModel
import SettleConfig

/// How `settle enqueue` reads the proof of a store that has options of its own (the App Store's
/// receipt, signed transaction or transaction id; Google Play's purchase token file) rather than
/// the generic `--proof-file`. The command parses them, hands their values here and records
/// the order the module makes of them: the core never reads a store's proof.
package struct EnqueueOptions: Sendable {
    /// Its options, each taking a value (`--receipt-file`), for the parser and the completions.
    package var names: [String]
    /// Its usage lines after `settle enqueue` (wrapped by the module).
    package var usage: String
    /// Its paragraph of the help: what proves its orders and how each option is read.
    package var help: String
    /// The order the options describe, or a failure naming what was wrong; reads files through
    /// `request.read`, never quoting a secret.
    package var order: @Sendable (EnqueueRequest) throws -> EnqueuedOrder

    package init(names: [String], usage: String, help: String,
                 order: @escaping @Sendable (EnqueueRequest) throws -> EnqueuedOrder) {
        (self.names, self.usage, self.help, self.order) = (names, usage, help, order)
    }
}

/// What `settle enqueue` was given, for a store's `EnqueueOptions`: the order's ids and, as a
/// store's command gets them, its options' values (`--app-account-token` too), the files it
/// reads and the configuration (read on first use: a usage mistake is reported before it is).
package struct EnqueueRequest {
    package var orderId: String
    package var userId: String
    package var productId: String
    package var input: StoreCommandInput

    package init(orderId: String, userId: String, productId: String, input: StoreCommandInput) {
        (self.orderId, self.userId, self.productId, self.input) = (orderId, userId, productId, input)
    }

    package var values: [String: String] { input.values }

    /// Prints a warning that does not stop the enqueue.
    package func warn(_ text: String) { input.printError("settle enqueue: warning: " + text) }
}

/// The order a store's options describe, and what `enqueue` adds to its line after the id
/// ("google_play, token 3f2a…"): never a secret.
package struct EnqueuedOrder: Sendable {
    package var order: NewOrder
    package var shown: String?

    package init(_ order: NewOrder, shown: String? = nil) {
        self.order = order
        self.shown = shown
    }
}

/// What was wrong with `enqueue`'s options: a usage mistake (exit 64) or bad input (exit 65).
package struct InputFailure: Error, Sendable {
    package enum Kind: Sendable { case usage, data }
    package var kind: Kind
    package var message: String

    package static func usage(_ message: String) -> InputFailure { InputFailure(kind: .usage, message: message) }
    package static func data(_ message: String) -> InputFailure { InputFailure(kind: .data, message: message) }
}

/// The shapes proof text must have before it is stored: checked the same by `enqueue`, `retry`
/// and `link`, never quoting the text (it may be a bearer secret).
package enum ProofText {
    /// Base64, as devices upload receipts. `source`: the file, or "standard input".
    package static func base64(_ text: String, what: String, source: String) throws(InputFailure) -> String {
        guard !text.isEmpty, let decoded = Data(base64Encoded: text), !decoded.isEmpty else {
            throw .data("\(what) in \(source) is not base64")
        }
        return text
    }

    /// A compact JWS: three base64url parts.
    package static func compactJWS(_ text: String, what: String, source: String) throws(InputFailure) -> String {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let base64url = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(base64url.contains) }) else {
            throw .data("\(what) in \(source) is not a compact JWS (three base64url parts)")
        }
        return text
    }

    /// How an error names where the text came from.
    package static func source(_ path: String) -> String { path == "-" ? "standard input" : path }
}

/// A bearer purchase token read from a file or standard input (never argv). Errors never quote it.
package enum PurchaseTokenText {
    package static func read(_ path: String, _ request: EnqueueRequest) throws -> PurchaseToken {
        try token(try request.input.read(path, "purchase token", false), source: ProofText.source(path))
    }

    package static func token(_ text: String, source: String) throws(InputFailure) -> PurchaseToken {
        guard let token = PurchaseToken(text) else {
            throw .data("purchase token in \(source) is not a purchase token (printable ASCII, at most 4096 characters)")
        }
        return token
    }
}
