import Foundation
import SettleModel
import SettleLedger
import SettleBase
import SettleEngine

/// `settle enqueue`: records a paid order and its proof of purchase.
enum EnqueueCommand {
    /// The core's options, and every store's own (`EnqueueOptions.names`).
    static var spec: ArgumentSpec {
        let core = ["--order", "--user", "--product", "--app-account-token", "--store", "--proof-file"]
        let stores = StoreModules.all.flatMap { $0.enqueueOptions?.names ?? [] }
        return ArgumentSpec(command: "enqueue", options: (core + stores).map { .init(name: $0, takesValue: true) })
    }

    static var help: String {
        let options = StoreModules.all.compactMap { $0.enqueueOptions }
        let usage = options.map(\.usage) + ["""
            settle enqueue --store STORE --order ID --user USER --product PRODUCT
                           --proof-file FILE|- [--app-account-token ACCOUNT_ID]
            """]
        return "Usage: " + usage.map { $0.replacingOccurrences(of: "\n", with: "\n       ") }.joined(separator: "\n       ")
            + """


            Records a paid order and its proof of purchase. The same order twice with the same
            content is a no-op (exit 0); with different content it is refused (exit 65).


            """ + options.map(\.help).joined(separator: "\n\n") + """


            An order of any other store is proven by --proof-file, in the form that store's
            documentation gives, read from a file or standard input, never from the command line.
            """
    }

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
        for reserving in StoreRegistry.descriptors {
            guard let prefix = reserving.reservedOrderIdPrefix, orderId.hasPrefix(prefix) else { continue }
            throw CommandFailure(.dataError, "--order: ids starting with \(prefix) are settle's own, for purchases \(reserving.owner) reports; use an id of the backend's")
        }
        let name = parsed.value("--store") ?? Store.ofUnnamedOrders.rawValue
        guard let module = context.modules.first(where: { $0.descriptor.store.rawValue == name }) else {
            let names = context.modules.map { $0.descriptor.store.rawValue }.joined(separator: ", ")
            throw UsageError(command: "enqueue", message: "--store: '\(PrintableText.escape(String(name.prefix(40))))' is not one of \(names)")
        }
        let store = module.descriptor.store
        // Another store's options are a mistake, never ignored: the order would lack its proof.
        let own = Set(module.enqueueOptions?.names ?? (module.proofFormat != nil ? ["--proof-file"] : []))
        for other in context.modules where other.descriptor.store != store {
            for option in other.enqueueOptions?.names ?? [] where parsed.value(option) != nil && !own.contains(option) {
                throw UsageError(command: "enqueue", message: "\(option) is a proof of \(other.descriptor.displayName) orders, not of \(store.displayName) orders (--store)")
            }
        }
        if let format = module.proofFormat {
            return try enqueueProof(context, parsed, store: store, format: format, orderId: orderId, userId: userId, productId: productId)
        }
        if parsed.value("--proof-file") != nil {
            throw UsageError(command: "enqueue", message: "--proof-file is the proof of a store with no options of its own; \(store.rawValue) orders have theirs")
        }
        guard let options = module.enqueueOptions else {
            throw UsageError(command: "enqueue", message: "\(store.displayName) orders cannot be enqueued from the command line")
        }
        var values: [String: String] = [:]
        for option in options.names + ["--app-account-token"] { values[option] = parsed.value(option) }
        let input = StoreCommandInput(
            values: values, environment: context.environment, time: context.time,
            print: { context.print($0) }, printError: { context.printError($0) },
            configuration: { try context.loadConfiguration(parsed) },
            read: { path, what, keep in try read(path, what: what, keepingInnerSpace: keep) })
        let request = EnqueueRequest(orderId: orderId, userId: userId, productId: productId, input: input)
        let enqueued: EnqueuedOrder
        do {
            enqueued = try options.order(request)
        } catch let failure as InputFailure {
            switch failure.kind {
            case .usage: throw UsageError(command: "enqueue", message: failure.message)
            case .data: throw CommandFailure(.dataError, failure.message)
            }
        }
        let configuration = try context.loadConfiguration(parsed)
        do {
            let ledger = try configuration.openLedger(.existing, time: context.time)
            let result = try ledger.enqueue(enqueued.order)
            context.print(result == .created ? "enqueued \(orderId)" + (enqueued.shown.map { " (\($0))" } ?? "")
                                             : "\(orderId) is already enqueued with the same content; nothing changed")
        } catch {
            throw CommandFailure.from(error)
        }
    }

    /// A store module's proof (`--proof-file`), read by its module's `ProofFormat`, stored as
    /// data and never printed; the core's own proof options do not apply.
    private static func enqueueProof(_ context: CommandContext, _ parsed: ParsedArguments, store: Store, format: ProofFormat,
                                     orderId: String, userId: String, productId: String) throws {
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
        do { return try PurchaseTokenText.token(text, source: ProofText.source(path)) } catch { throw CommandFailure(.dataError, error.message) }
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
        return try checked { () throws(InputFailure) in try ProofText.base64(text, what: "receipt", source: ProofText.source(path)) }
    }

    /// A signed transaction must look like a compact JWS: three base64url parts.
    static func readSignedTransaction(_ path: String) throws(CommandFailure) -> String { try readJWS(path, what: "signed transaction") }

    /// A signed AppTransaction: a compact JWS too, verified where it is used.
    static func readAppTransaction(_ path: String) throws(CommandFailure) -> String { try readJWS(path, what: "app transaction") }

    private static func readJWS(_ path: String, what: String) throws(CommandFailure) -> String {
        let text = try read(path, what: what)
        return try checked { () throws(InputFailure) in try ProofText.compactJWS(text, what: what, source: ProofText.source(path)) }
    }

    private static func checked(_ body: () throws(InputFailure) -> String) throws(CommandFailure) -> String {
        do { return try body() } catch { throw CommandFailure(.dataError, error.message) }
    }
}
