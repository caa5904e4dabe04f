import Foundation
import SettleModel
import SettleConfig
import SettleEngine

/// `settle enqueue` for an App Store order: a base64 receipt, a StoreKit 2 signed transaction,
/// a bare transaction id (which needs server_api), and the signed AppTransaction that links
/// the user's Apple Account.
extension AppStoreModule {
    package static var enqueueOptions: EnqueueOptions? {
        EnqueueOptions(
            names: ["--transaction", "--receipt-file", "--signed-transaction-file", "--app-transaction-file"],
            usage: """
                settle enqueue --order ID --user USER --product PRODUCT [--transaction TXN]
                               [--receipt-file FILE|-] [--signed-transaction-file FILE|-]
                               [--app-account-token UUID] [--app-transaction-file FILE|-]
                """,
            help: """
                An App Store order (the default store) is proven by a base64 app receipt, a StoreKit 2 signed
                transaction (JWS), or only the Apple transaction id (which needs server_api). --app-account-token
                is the UUID the app passed to StoreKit for this user; with user_binding.app_account_token
                "order" it binds the purchase to the user. --app-transaction-file is the signed AppTransaction
                the user's app read (StoreKit's AppTransaction.shared): once it verifies, its appTransactionId is
                linked to the user, as settle link does, so purchases of that Apple Account without the user's
                token bind to them; one that does not verify rejects the order.
                """,
            order: enqueuedOrder)
    }

    private static func enqueuedOrder(_ request: EnqueueRequest) throws -> EnqueuedOrder {
        let values = request.values
        var transactionId = values["--transaction"]
        let stdinReaders = ["--receipt-file", "--signed-transaction-file", "--app-transaction-file"].filter { values[$0] == "-" }
        if stdinReaders.count > 1 { throw InputFailure.usage("only one of the proofs can be read from standard input") }
        let receipt = try values["--receipt-file"].map { path in try readReceipt(path, request) }
        let signed = try values["--signed-transaction-file"].map { path in try readJWS(path, what: "signed transaction", request) }
        let appTransaction = try values["--app-transaction-file"].map { path in try readJWS(path, what: "app transaction", request) }
        guard receipt != nil || signed != nil || transactionId != nil else {
            throw InputFailure.usage("a proof of purchase is required: --receipt-file, --signed-transaction-file or --transaction")
        }
        if let transactionId, transactionId.isEmpty || transactionId.count > 64 {
            throw InputFailure.data("--transaction: '\(transactionId.prefix(64))' is not an Apple transaction id")
        }
        // The order is found by its transaction id when Apple's notification of the same purchase
        // comes: read from the signed transaction (verification still checks the signature and
        // that the two agree), so app-then-Apple never makes a second order.
        if transactionId == nil, let signed, let named = Order.transactionId(namedIn: signed) { transactionId = named }
        var token: String? = nil
        if let text = values["--app-account-token"] {
            guard let uuid = UUID(uuidString: text) else {
                throw InputFailure.data("--app-account-token: '\(text.prefix(64))' is not a UUID")
            }
            token = uuid.uuidString.lowercased()
        }
        let configuration = try request.input.configuration()
        if receipt == nil && signed == nil && configuration.serverAPI == nil {
            throw InputFailure.data("--transaction alone can only be verified through the App Store Server API, and no server_api is configured; enqueue the receipt or the signed transaction too")
        }
        if configuration.products[request.productId] == nil {
            request.warn("product \(request.productId) is not in the configuration's products; reconcile will reject it as unknown_product")
        }
        return EnqueuedOrder(NewOrder(orderId: request.orderId, userId: request.userId, productId: request.productId,
                                      transactionId: transactionId, receipt: receipt, signedTransaction: signed,
                                      appAccountToken: token, appTransaction: appTransaction))
    }

    private static func readReceipt(_ path: String, _ request: EnqueueRequest) throws -> String {
        try ProofText.base64(try request.input.read(path, "receipt", false), what: "receipt", source: ProofText.source(path))
    }

    private static func readJWS(_ path: String, what: String, _ request: EnqueueRequest) throws -> String {
        try ProofText.compactJWS(try request.input.read(path, what, false), what: what, source: ProofText.source(path))
    }
}
