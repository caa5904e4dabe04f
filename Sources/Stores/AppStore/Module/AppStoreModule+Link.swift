import Foundation
import SettleBase
import SettleModel
import SettleConfig
import SettleAppStore
import SettleLedger
import SettleEngine

/// `settle link --user USER_ID --app-transaction-file FILE|-`: learns, from a signed
/// AppTransaction the user's app read, that its `appTransactionId` is the user's, so the App
/// Store purchases of that Apple Account that carry no appAccountToken of the user's (offer
/// codes, purchases in the App Store, a family member's shared ones) bind to them.
extension AppStoreModule {
    package static var commands: [StoreCommand] {
        [StoreCommand(name: "link", summary: "link an Apple Account (a signed AppTransaction) to a user, for purchases without their token",
                      help: linkHelp, options: ["--user", "--app-transaction-file"], run: link)]
    }

    static let linkHelp = """
        Usage: settle link --user USER_ID --app-transaction-file FILE|-

        Links an Apple Account to USER_ID. FILE (or standard input) holds the signed AppTransaction
        (a JWS: StoreKit's AppTransaction.shared, jwsRepresentation) that the user's app read on
        their device. settle verifies it like a signed transaction (the chain to the configured
        Apple root, bundle_id, the environment) and records its appTransactionId as USER_ID's.
        Apple puts that id on every transaction of the Apple Account in this app, and each family
        member has their own: a purchase without the user's appAccountToken (an offer code, a
        purchase in the App Store, a family member's shared purchase) whose appTransactionId is
        linked is bound to the user as a token binds it; a family member's is bound to the member,
        never to the buyer. Purchases of the account that Apple already reported and that wait as
        unclaimed_purchase are assigned to the user (pending, due now). A bare id is never linked:
        anyone can send one. The same link twice is a no-op. An id linked to several users binds to none of them (a person decides); settle says
        so. Exit 65 when the AppTransaction does not verify, and when the ledger shows the account
        is another user's (settle granted that user a purchase naming its appTransactionId): the
        link is refused and its purchases wait for a person.
        """

    private static func link(_ input: StoreCommandInput) throws {
        guard let user = input.values["--user"], !user.isEmpty else { throw InputFailure.usage("--user USER_ID is required") }
        guard let path = input.values["--app-transaction-file"] else {
            throw InputFailure.usage("--app-transaction-file FILE|- is required")
        }
        let token = try ProofText.compactJWS(try input.read(path, "app transaction", false), what: "app transaction",
                                             source: ProofText.source(path))
        let configuration = try input.configuration()
        let app = try verify(token, configuration: configuration, now: input.time.now)
        let ledger = try configuration.openLedger(.existing, time: input.time)
        let link = try ledger.linkAppTransaction(app, userId: user, source: "link", orderId: nil)
        input.print(link.created ? "linked appTransactionId \(app.appTransactionId) (\(app.environment)) to user \(user)"
                                 : "appTransactionId \(app.appTransactionId) is already linked to user \(user); nothing changed")
        for orderId in link.assigned {
            input.print("assigned \(orderId) to user \(user): Apple reported it unclaimed; pending, due now")
        }
        if !link.otherUsers.isEmpty {
            input.printError("settle link: warning: appTransactionId \(app.appTransactionId) is also linked to "
                             + "\(link.otherUsers.joined(separator: ", ")): its purchases bind to none of them by it; a person decides")
        }
    }

    /// The AppTransaction, verified against the configuration's Apple root and app; a failure is the data's (65).
    static func verify(_ token: String, configuration: Configuration, now: Date) throws -> AppTransaction {
        let verifier = SignedDataVerifier(rootCertificates: try configuration.storeKitRoots(), bundleId: configuration.bundleId,
                                          acceptSandbox: configuration.acceptSandbox, appAppleId: configuration.serverAPI?.appAppleId)
        switch verifier.verifyAppTransaction(token, now: now) {
        case let .success(app): return app
        case let .failure(failure): throw InputFailure.data("the app transaction does not verify: \(failure)")
        }
    }
}
