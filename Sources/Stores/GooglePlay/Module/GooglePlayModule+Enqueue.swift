import SettleModel
import SettleConfig
import SettleEngine

/// `settle enqueue --store google_play`: the purchase token is the one proof, read from a file
/// or standard input, never from the command line (a bearer secret; argv is visible to every
/// user of the host).
extension GooglePlayModule {
    package static var enqueueOptions: EnqueueOptions? {
        EnqueueOptions(
            names: ["--purchase-token-file"],
            usage: """
                settle enqueue --store google_play --order ID --user USER --product PRODUCT
                               --purchase-token-file FILE|- [--app-account-token ACCOUNT_ID]
                """,
            help: """
                A Google Play order (--store google_play) is proven by its purchase token, read from a
                file or standard input, never from the command line (a token is a bearer secret and argv
                is visible to every user of the host). There --app-account-token is the
                obfuscatedExternalAccountId the app passed to Play Billing for this user.
                """,
            order: enqueuedOrder)
    }

    private static func enqueuedOrder(_ request: EnqueueRequest) throws -> EnqueuedOrder {
        guard let path = request.values["--purchase-token-file"] else {
            throw InputFailure.usage("a Google Play order needs --purchase-token-file FILE|- (never the token itself on the command line)")
        }
        let token = try PurchaseTokenText.read(path, request)
        var accountId: String? = nil
        if let text = request.values["--app-account-token"] {
            guard !text.isEmpty, text.count <= 64 else {
                throw InputFailure.data("--app-account-token: an obfuscatedExternalAccountId has 1 to 64 characters")
            }
            accountId = text
        }
        let configuration = try request.input.configuration()
        if configuration.googlePlay == nil {
            request.warn("no google_play section is configured; reconcile cannot verify this order until one is")
        }
        if !(configuration.products[request.productId]?.stores.contains(.googlePlay) ?? false) {
            request.warn("product \(request.productId) is not a google_play product in the configuration; reconcile will set the order aside as unknown_product")
        }
        return EnqueuedOrder(NewOrder(orderId: request.orderId, userId: request.userId, productId: request.productId,
                                      appAccountToken: accountId, store: .googlePlay, purchaseToken: token),
                             shown: "google_play, \(token.fingerprint)")
    }
}
