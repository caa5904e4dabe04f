import Foundation
import SettleModel
import SettleLedger
import SettleBase
import SettleEngine

/// `settle enqueue`: records a paid order and its proof of purchase.
enum EnqueueCommand {
    static let spec = ArgumentSpec(command: "enqueue", options: [
        .init(name: "--order", takesValue: true), .init(name: "--user", takesValue: true),
        .init(name: "--product", takesValue: true), .init(name: "--transaction", takesValue: true),
        .init(name: "--receipt-file", takesValue: true), .init(name: "--signed-transaction-file", takesValue: true),
        .init(name: "--app-account-token", takesValue: true), .init(name: "--store", takesValue: true),
        .init(name: "--purchase-token-file", takesValue: true), .init(name: "--app-transaction-file", takesValue: true),
        .init(name: "--proof-file", takesValue: true),
    ])

    static let help = """
    Usage: settle enqueue --order ID --user USER --product PRODUCT [--transaction TXN]
                          [--receipt-file FILE|-] [--signed-transaction-file FILE|-]
                          [--app-account-token UUID] [--app-transaction-file FILE|-]
           settle enqueue --store google_play --order ID --user USER --product PRODUCT
                          --purchase-token-file FILE|- [--app-account-token ACCOUNT_ID]
           settle enqueue --store STORE --order ID --user USER --product PRODUCT
                          --proof-file FILE|- [--app-account-token ACCOUNT_ID]

    Records a paid order and its proof of purchase: a base64 app receipt, a StoreKit 2 signed
    transaction (JWS), or only the Apple transaction id (which needs server_api). The same
    order twice with the same content is a no-op (exit 0); with different content it is
    refused (exit 65). --app-account-token is the UUID the app passed to StoreKit for this
    user; with user_binding.app_account_token "order" it binds the purchase to the user.
    --app-transaction-file is the signed AppTransaction the user's app read (StoreKit's
    AppTransaction.shared): once it verifies, its appTransactionId is linked to the user, as
    settle link does, so purchases of that Apple Account without the user's token bind to
    them; one that does not verify rejects the order.

    A Google Play order (--store google_play) is proven by its purchase token, read from a
    file or standard input, never from the command line (a token is a bearer secret and argv
    is visible to every user of the host). There --app-account-token is the
    obfuscatedExternalAccountId the app passed to Play Billing for this user.

    An order of any other store is proven by --proof-file, in the form that store's
    documentation gives, read from a file or standard input, never from the command line.
    """

    /// Proofs larger than this are refused: no genuine receipt comes near it.
    static let maxProofBytes = 16 << 20

    static func run(_ context: CommandContext) throws {
        let parsed = try ParsedArguments(context.arguments, spec: spec)
        if parsed.wantsHelp { return context.print(help) }
        func required(_ name: String) throws(UsageError) -> String {
            guard let value = parsed.value(name), !value.isEmpty else {
                throw UsageError(command: "enqueue", message: "missing required option '\(name)'")
            }
            return value
        }
        let orderId = try required("--order")
        let userId = try required("--user")
        let productId = try required("--product")
        guard orderId.count <= 200 else { throw CommandFailure(.dataError, "--order: an order id has at most 200 characters") }
        guard !orderId.hasPrefix(NotificationTransitions.appleOrderIdPrefix) else {
            throw CommandFailure(.dataError, "--order: ids starting with \(NotificationTransitions.appleOrderIdPrefix) are settle's own, for purchases Apple reports; use an id of the backend's")
        }
        let name = parsed.value("--store") ?? Store.appStore.rawValue
        guard let module = context.modules.first(where: { $0.descriptor.store.rawValue == name }) else {
            let names = context.modules.map { $0.descriptor.store.rawValue }.joined(separator: ", ")
            throw UsageError(command: "enqueue", message: "--store: '\(PrintableText.escape(String(name.prefix(40))))' is not one of \(names)")
        }
        let store = module.descriptor.store
        if let format = module.proofFormat {
            return try enqueueProof(context, parsed, store: store, format: format, orderId: orderId, userId: userId, productId: productId)
        }
        if parsed.value("--proof-file") != nil {
            throw UsageError(command: "enqueue", message: "--proof-file is the proof of a store with no options of its own; \(store.rawValue) orders have theirs")
        }
        if store == .googlePlay {
            return try enqueuePlay(context, parsed, orderId: orderId, userId: userId, productId: productId)
        }
        if parsed.value("--purchase-token-file") != nil {
            throw UsageError(command: "enqueue", message: "--purchase-token-file is the proof of a Google Play order: add --store google_play")
        }
        var transactionId = parsed.value("--transaction")
        let stdinReaders = ["--receipt-file", "--signed-transaction-file", "--app-transaction-file"].filter { parsed.value($0) == "-" }
        if stdinReaders.count > 1 {
            throw UsageError(command: "enqueue", message: "only one of the proofs can be read from standard input")
        }
        let receipt = try parsed.value("--receipt-file").map { (path) throws(CommandFailure) in try readReceipt(path) }
        let signed = try parsed.value("--signed-transaction-file").map { (path) throws(CommandFailure) in try readSignedTransaction(path) }
        let appTransaction = try parsed.value("--app-transaction-file").map { (path) throws(CommandFailure) in try readAppTransaction(path) }
        guard receipt != nil || signed != nil || transactionId != nil else {
            throw UsageError(command: "enqueue", message: "a proof of purchase is required: --receipt-file, --signed-transaction-file or --transaction")
        }
        if let transactionId, transactionId.isEmpty || transactionId.count > 64 {
            throw CommandFailure(.dataError, "--transaction: '\(transactionId.prefix(64))' is not an Apple transaction id")
        }
        // The order is found by its transaction id when Apple's notification of the same purchase
        // comes: read from the signed transaction (verification still checks the signature and
        // that the two agree), so app-then-Apple never makes a second order.
        if transactionId == nil, let signed, let named = Order.transactionId(namedIn: signed) { transactionId = named }
        var token: String? = nil
        if let text = parsed.value("--app-account-token") {
            guard let uuid = UUID(uuidString: text) else {
                throw CommandFailure(.dataError, "--app-account-token: '\(text.prefix(64))' is not a UUID")
            }
            token = uuid.uuidString.lowercased()
        }
        let configuration = try context.loadConfiguration(parsed)
        if receipt == nil && signed == nil && configuration.serverAPI == nil {
            throw CommandFailure(.dataError, "--transaction alone can only be verified through the App Store Server API, and no server_api is configured; enqueue the receipt or the signed transaction too")
        }
        if configuration.products[productId] == nil {
            context.printError("settle enqueue: warning: product \(productId) is not in the configuration's products; reconcile will reject it as unknown_product")
        }
        do {
            let ledger = try configuration.openLedger(.existing, time: context.time)
            let result = try ledger.enqueue(NewOrder(orderId: orderId, userId: userId, productId: productId,
                                                     transactionId: transactionId, receipt: receipt, signedTransaction: signed,
                                                     appAccountToken: token, appTransaction: appTransaction))
            context.print(result == .created ? "enqueued \(orderId)" : "\(orderId) is already enqueued with the same content; nothing changed")
        } catch {
            throw CommandFailure.from(error)
        }
    }

    /// `--store google_play`: the purchase token is the one proof; Apple's proofs do not apply.
    private static func enqueuePlay(_ context: CommandContext, _ parsed: ParsedArguments, orderId: String, userId: String,
                                    productId: String) throws {
        for appleProof in ["--receipt-file", "--signed-transaction-file", "--transaction", "--app-transaction-file"] where parsed.value(appleProof) != nil {
            throw UsageError(command: "enqueue", message: "\(appleProof) is an App Store proof; a Google Play order is proven by --purchase-token-file")
        }
        guard let path = parsed.value("--purchase-token-file") else {
            throw UsageError(command: "enqueue", message: "a Google Play order needs --purchase-token-file FILE|- (never the token itself on the command line)")
        }
        let token = try readPurchaseToken(path)
        guard !orderId.hasPrefix(PlayOrderId.prefix) else {
            throw CommandFailure(.dataError, "--order: ids starting with \(PlayOrderId.prefix) are settle's own, for purchases Google reports; use an id of the backend's")
        }
        var accountId: String? = nil
        if let text = parsed.value("--app-account-token") {
            guard !text.isEmpty, text.count <= 64 else {
                throw CommandFailure(.dataError, "--app-account-token: an obfuscatedExternalAccountId has 1 to 64 characters")
            }
            accountId = text
        }
        let configuration = try context.loadConfiguration(parsed)
        if configuration.googlePlay == nil {
            context.printError("settle enqueue: warning: no google_play section is configured; reconcile cannot verify this order until one is")
        }
        if !(configuration.products[productId]?.stores.contains(.googlePlay) ?? false) {
            context.printError("settle enqueue: warning: product \(productId) is not a google_play product in the configuration; reconcile will set the order aside as unknown_product")
        }
        do {
            let ledger = try configuration.openLedger(.existing, time: context.time)
            let result = try ledger.enqueue(NewOrder(orderId: orderId, userId: userId, productId: productId, appAccountToken: accountId,
                                                     store: .googlePlay, purchaseToken: token))
            context.print(result == .created ? "enqueued \(orderId) (google_play, \(token.fingerprint))"
                                             : "\(orderId) is already enqueued with the same content; nothing changed")
        } catch {
            throw CommandFailure.from(error)
        }
    }

    /// A store module's proof (`--proof-file`), read by its module's `ProofFormat`, stored as
    /// data and never printed; the core's own proof options do not apply.
    private static func enqueueProof(_ context: CommandContext, _ parsed: ParsedArguments, store: Store, format: ProofFormat,
                                     orderId: String, userId: String, productId: String) throws {
        let others = ["--receipt-file", "--signed-transaction-file", "--transaction", "--app-transaction-file", "--purchase-token-file"]
        for option in others where parsed.value(option) != nil {
            throw UsageError(command: "enqueue", message: "\(option) is not a proof of a \(store.displayName) order; it is proven by --proof-file")
        }
        guard let path = parsed.value("--proof-file") else {
            throw UsageError(command: "enqueue", message: "a \(store.displayName) order needs --proof-file FILE|- (\(format.what); never on the command line)")
        }
        let text = try read(path, what: "proof", keepingInnerSpace: true)
        let proof: StoreProof
        switch format.read(text) {
        case let .success(read): proof = read
        case let .failure(error):
            throw CommandFailure(.dataError, "proof in \(path == "-" ? "standard input" : path) is not \(format.what): \(error.message)")
        }
        let configuration = try context.loadConfiguration(parsed)
        if let key = store.descriptor.configurationKey, configuration.storeSections[key] == nil {
            context.printError("settle enqueue: warning: \(store.unconfiguredHint); reconcile cannot verify this order until it is")
        }
        if !(configuration.products[productId]?.stores.contains(store) ?? false) {
            context.printError("settle enqueue: warning: product \(productId) is not a \(store.rawValue) product in the configuration; reconcile will set the order aside as unknown_product")
        }
        let account = parsed.value("--app-account-token")
        if let account, account.isEmpty || account.count > 200 {
            throw CommandFailure(.dataError, "--app-account-token: an account id has 1 to 200 characters")
        }
        var order = NewOrder(orderId: orderId, userId: userId, productId: productId, appAccountToken: account, store: store)
        order.storeProof = proof
        do {
            let ledger = try configuration.openLedger(.existing, time: context.time)
            let result = try ledger.enqueue(order)
            context.print(result == .created ? "enqueued \(orderId) (\(store.rawValue), \(proof.kind))"
                                             : "\(orderId) is already enqueued with the same content; nothing changed")
        } catch {
            throw CommandFailure.from(error)
        }
    }

    /// A purchase token from a file or standard input. Errors never quote it.
    static func readPurchaseToken(_ path: String) throws(CommandFailure) -> PurchaseToken {
        let text = try read(path, what: "purchase token")
        guard let token = PurchaseToken(text) else {
            throw CommandFailure(.dataError, "purchase token in \(path == "-" ? "standard input" : path) is not a Google Play purchase token (printable ASCII, at most 4096 characters)")
        }
        return token
    }

    /// `keepingInnerSpace`: only the ends are trimmed (a module's proof may be JSON); otherwise
    /// every space goes (base64 wrapped over lines).
    static func read(_ path: String, what: String, keepingInnerSpace: Bool = false) throws(CommandFailure) -> String {
        let data: Data?
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: path)
        }
        guard let data else { throw CommandFailure(.dataError, "cannot read \(what) file \(path)") }
        guard data.count <= maxProofBytes else {
            throw CommandFailure(.dataError, "\(what) in \(path) is larger than \(maxProofBytes) bytes")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CommandFailure(.dataError, "\(what) in \(path) is not text (a \(what) is uploaded as base64 text)")
        }
        return keepingInnerSpace ? text.trimmingCharacters(in: .whitespacesAndNewlines) : text.filter { !$0.isWhitespace }
    }

    /// A receipt must be base64 (the form devices upload and verifyReceipt takes).
    static func readReceipt(_ path: String) throws(CommandFailure) -> String {
        let text = try read(path, what: "receipt")
        guard !text.isEmpty, let decoded = Data(base64Encoded: text), !decoded.isEmpty else {
            throw CommandFailure(.dataError, "receipt in \(path == "-" ? "standard input" : path) is not base64")
        }
        return text
    }

    /// A signed transaction must look like a compact JWS: three base64url parts.
    static func readSignedTransaction(_ path: String) throws(CommandFailure) -> String {
        try readJWS(path, what: "signed transaction")
    }

    /// A signed AppTransaction: a compact JWS too, verified where it is used.
    static func readAppTransaction(_ path: String) throws(CommandFailure) -> String {
        try readJWS(path, what: "app transaction")
    }

    private static func readJWS(_ path: String, what: String) throws(CommandFailure) -> String {
        let text = try read(path, what: what)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let base64url = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(base64url.contains) }) else {
            throw CommandFailure(.dataError, "\(what) in \(path == "-" ? "standard input" : path) is not a compact JWS (three base64url parts)")
        }
        return text
    }
}
