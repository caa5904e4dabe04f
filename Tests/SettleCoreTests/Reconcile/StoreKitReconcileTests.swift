import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleBase
@testable import SettleModel
@testable import SettleAppStore
@testable import SettleLedger
@testable import SettleEngine
@testable import SettleAppStoreSimulator
@testable import SettleAppStoreModule

/// StoreKit 2 orders through whole passes: a real ledger, the simulated App Store Server API
/// over loopback (which checks every bearer token), real hooks.
final class StoreKitReconcileTests: XCTestCase {
    var world: TestWorld!
    var ledger: SQLiteLedger!
    let logLines = LineCollector()

    override func setUpWithError() throws {
        world = try TestWorld()
        try world.writeConfig(receiptAPI: false, serverAPI: true)
        ledger = try world.ledger()
    }

    override func tearDown() {
        ledger = nil
        world = nil
    }

    func pass() throws -> PassReport {
        let lines = logLines
        let log = Log(environment: [:], time: world.time, sink: { line in lines.append(line) })
        return try world.reconciler(ledger: ledger, log: log).runPass()
    }

    func order(_ id: String) throws -> Order { try XCTUnwrap(try ledger.orderRecord(id)?.order) }

    func signedDevice(_ transaction: SimulatedSignedTransaction) throws -> String {
        try transaction.signed(at: world.time.unixSeconds * 1000)
    }

    func enqueueSigned(_ id: String, _ token: String, transactionId: String? = nil) throws {
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: world.coins, transactionId: transactionId,
                                        signedTransaction: token))
    }

    /// The appAccountToken the app set for the user of every bare-id order here.
    let token = "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"

    func enqueueTransactionId(_ id: String, _ txn: String, product: String? = nil, token: String? = nil) throws {
        _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u-\(id)", productId: product ?? world.coins, transactionId: txn,
                                        appAccountToken: token ?? self.token))
    }

    // MARK: - Signed transactions

    func testSignedTransaction_isVerifiedLocally_confirmedWithApple_andDelivered() throws {
        let transaction = world.scriptTransaction("2000000900000001")
        try enqueueSigned("o-1", try signedDevice(transaction))
        XCTAssertEqual(try pass().finished, 1)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .finished)
        XCTAssertEqual(o.verified?.transactionId, "2000000900000001")
        XCTAssertEqual(o.environment, "Production")
        XCTAssertEqual(world.deliveries, ["2000000900000001 o-1"])
        let requests = world.simulator.serverRequests
        XCTAssertEqual(requests.map(\.environment), [.production])
        XCTAssertEqual(requests.first?.tokenProblem, nil, "the bearer JWT passed the simulator's checks")
    }

    func testForgedSignedTransaction_isRejected_evenThoughAppleKnowsTheTransaction() throws {
        let transaction = world.scriptTransaction("2000000900000002")
        let genuine = try signedDevice(transaction)
        var parts = genuine.split(separator: ".").map(String.init)
        // Claim more coins: a new payload under the old signature.
        var payload = try JSONValue.parse(try XCTUnwrap(Base64URL.decode(parts[1])))
        if case var .object(members) = payload, let i = members.firstIndex(where: { $0.0 == "quantity" }) {
            members[i].1 = .number(100)
            payload = .object(members)
        }
        parts[1] = Base64URL.encode(payload.data)
        try enqueueSigned("o-forged", parts.joined(separator: "."))
        XCTAssertEqual(try pass().rejected, 1)
        let o = try order("o-forged")
        XCTAssertEqual(o.reason, "signature_invalid")
        XCTAssertTrue(o.lastError?.contains("signature_invalid") == true, o.lastError ?? "")
        XCTAssertEqual(world.simulator.serverRequests.count, 0, "a forged proof is refused before asking Apple")
        XCTAssertEqual(world.deliveries, [])
    }

    func testSignedTransactionFromAnotherChain_isRejected() throws {
        // Signed by the right-shaped chain, but the configuration trusts only Apple's real root.
        try FileManager.default.copyItem(atPath: TestWorld.fixture("apple/roots/AppleRootCA-G3.pem"),
                                         toPath: world.folder + "/apple-root.pem")
        var api = world.serverAPIConfig
        if case var .object(members) = api, let i = members.firstIndex(where: { $0.0 == "root_certificates" }) {
            members[i].1 = .array([.string("apple-root.pem")])
            api = .object(members)
        }
        try world.writeConfig(receiptAPI: false, overrides: [("server_api", api)])
        try enqueueSigned("o-1", try signedDevice(world.scriptTransaction("2000000900000003")))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "signature_invalid")
    }

    func testSignedTransaction_refundedPerApple_isRejectedAsRefunded() throws {
        // The device signed it before the refund; Apple's current answer carries revocationDate.
        var atPurchase = world.scriptTransaction("2000000900000004")
        let deviceToken = try signedDevice(atPurchase)
        atPurchase.revocationDateMs = atPurchase.purchaseDateMs + 1000
        world.simulator.script(transaction: "2000000900000004", TransactionScript(transaction: atPurchase))
        try enqueueSigned("o-1", deviceToken)
        XCTAssertEqual(try pass().rejected, 1)
        XCTAssertEqual(try order("o-1").reason, "refunded")
    }

    func testXcodeSignedTransaction_isNeverAccepted() throws {
        var transaction = world.scriptTransaction("2000000900000005")
        transaction.environment = "Xcode"
        try enqueueSigned("o-1", try signedDevice(transaction))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "environment_mismatch")
    }

    func testSignedTransactionFromAnEnvironmentApplesNeverSends_thatMerelyMentionsSandbox_isAnEnvironmentMismatch_notSandboxNotAccepted() throws {
        try world.writeConfig(acceptSandbox: false, receiptAPI: false, serverAPI: true)
        var transaction = world.scriptTransaction("2000000900000016")
        transaction.environment = "SandboxLegacy"
        try enqueueSigned("o-1", try signedDevice(transaction))
        _ = try pass()
        XCTAssertEqual(try order("o-1").state, .rejected)
        XCTAssertEqual(try order("o-1").reason, "environment_mismatch")
    }

    func testSandboxSignedTransaction_whenSandboxIsNotAccepted_isRejected() throws {
        try world.writeConfig(acceptSandbox: false, receiptAPI: false, serverAPI: true)
        try enqueueSigned("o-1", try signedDevice(world.scriptTransaction("2000000900000006", environment: "Sandbox")))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "sandbox_not_accepted")
    }

    func testSignedTransactionForAnotherTransactionThanTheOrderNames_isRejected() throws {
        try enqueueSigned("o-1", try signedDevice(world.scriptTransaction("2000000900000007")), transactionId: "2000000999999999")
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "transaction_not_found")
    }

    func testSignedTransaction_withoutServerAPI_isDecidedFromTheVerifiedTokenAlone() throws {
        try world.write("AppleRootCA-G3.pem", SimulatorSigningChain.rootPEM)
        try world.writeConfig()
        try enqueueSigned("o-1", try signedDevice(world.scriptTransaction("2000000900000008")))
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(world.simulator.serverRequests.count, 0)
    }

    func testValidlySignedTransactionLackingAField_isPayloadInvalid_notSignatureInvalid() throws {
        let transaction = world.scriptTransaction("2000000900000009")
        guard case var .object(members) = transaction.payload(signedAt: world.time.unixSeconds * 1000) else { return XCTFail() }
        members.removeAll { $0.0 == "productId" }
        try enqueueSigned("o-1", try SimulatorSigningChain.sign(.object(members)))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "payload_invalid")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func transactionReceipt(_ transactionId: String, bundleId: String? = nil) -> String {
        let bid = bundleId.map { #" "bid" = "\#($0)";"# } ?? ""
        let purchaseInfo = Data(#"{ "transaction-id" = "\#(transactionId)"; "product-id" = "coins";\#(bid) }"#.utf8).base64EncodedString()
        let plist = #"{ "signature" = "AAAA"; "purchase-info" = "\#(purchaseInfo)"; "environment" = "Sandbox"; "pod" = "100"; "signing-status" = "0"; }"#
        return Data(plist.utf8).base64EncodedString()
    }

    func testIOS6TransactionReceipt_withoutReceiptAPI_isLookedUpByTheTransactionIdItNames() throws {
        world.scriptTransaction("1000000012345678", appAccountToken: token)
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins,
                                        receipt: transactionReceipt("1000000012345678", bundleId: world.bundleId),
                                        appAccountToken: token))
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(try order("o-1").verified?.transactionId, "1000000012345678")
        XCTAssertEqual(world.simulator.serverRequests.count, 1, "one Get Transaction Info, no history")
        XCTAssertEqual(world.simulator.historyRequests.count, 0)
    }

    func testIOS6TransactionReceipt_provesNoMoreThanABareId_soATokenlessPurchaseNeedsAPerson() throws {
        // Settle does not check the receipt's proprietary signature: unsigned_proofs applies.
        world.scriptTransaction("1000000012345679")
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: transactionReceipt("1000000012345679")))
        XCTAssertEqual(try pass().needsAttention, 1)
        XCTAssertEqual(try order("o-1").reason, "proof_unbound")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testIOS6TransactionReceiptForAnotherApp_isABundleMismatch_withoutAskingApple() throws {
        world.scriptTransaction("1000000012345680", appAccountToken: token)
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins,
                                        receipt: transactionReceipt("1000000012345680", bundleId: "com.other.app"), appAccountToken: token))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "bundle_mismatch")
        XCTAssertEqual(world.simulator.serverRequests.count, 0)
    }

    // MARK: - Bare transaction ids and the Server API's answers

    func testTransactionIdOnly_boundByAppAccountToken_isConfirmedWithGetTransactionInfo() throws {
        world.scriptTransaction("2000000900000010", appAccountToken: token)
        try enqueueTransactionId("o-1", "2000000900000010")
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(try order("o-1").verified?.quantity, 1)
    }

    func testTransactionOfAnotherProduct_isAProductMismatch() throws {
        world.scriptTransaction("2000000900000011", product: world.premium, appAccountToken: token)
        try enqueueTransactionId("o-1", "2000000900000011")
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "product_mismatch")
    }

    func testSandboxTransaction_isFoundAfterOneHop_on4040010() throws {
        world.scriptTransaction("2000000900000012", environment: "Sandbox", appAccountToken: token)
        try enqueueTransactionId("o-1", "2000000900000012")
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(world.simulator.serverRequests.map(\.environment), [.production, .sandbox])
        XCTAssertEqual(try order("o-1").environment, "Sandbox")
    }

    func testUnreleasedApp_productionAnswers401_andSandboxIsAsked() throws {
        world.scriptTransaction("2000000900000013", environment: "Sandbox", appAccountToken: token, answers: [.unauthorized])
        try enqueueTransactionId("o-1", "2000000900000013")
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(world.simulator.serverRequests.map(\.environment), [.production, .sandbox])
    }

    func test401FromBothEnvironments_isAConfigurationFault_thatUsesNoAttempt() throws {
        world.scriptTransaction("2000000900000014", answers: [.unauthorized, .unauthorized])
        try enqueueTransactionId("o-1", "2000000900000014")
        let report = try pass()
        XCTAssertEqual(report.configurationFault?.contains("401"), true)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .pending)
        XCTAssertEqual(o.attempts, 0)
    }

    func testWrongKey_isRefusedByTheSimulator_401() throws {
        // A valid P-256 key, but not the one App Store Connect (the simulator) knows.
        try world.write("appstore-key.p8", try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testLeaf.key"), encoding: .utf8), mode: 0o600)
        world.scriptTransaction("2000000900000015")
        try enqueueTransactionId("o-1", "2000000900000015")
        let report = try pass()
        XCTAssertNotNil(report.configurationFault)
        XCTAssertEqual(world.simulator.serverRequests.first?.tokenProblem, "signature does not verify")
    }

    func testRateLimitAtTheFloorRate_opensTheBreakerUntilRetryAfter_usingNoAttempt() throws {
        let pacer = try world.pacer(atFloor: [PacerKey(store: "app_store", group: "transaction_info", environment: "Production")])
        let retryAt = (world.time.unixSeconds + 600) * 1000
        world.scriptTransaction("2000000900000016", answers: [.rateLimited(retryAfter: String(retryAt))])
        try enqueueTransactionId("o-1", "2000000900000016")
        let report = try world.reconciler(ledger: ledger, pacer: pacer).runPass()
        XCTAssertTrue(report.breakersOpened.contains(.appStore))
        let breaker = try ledger.breakers()[.appStore]!
        XCTAssertEqual(breaker.state, .open)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(breaker.retryAt), world.time.unixSeconds + 600)
        XCTAssertEqual(try order("o-1").attempts, 0)
    }

    func testRetryableAppleErrors_useNoAttempt() throws {
        for (i, answer) in [SimulatedServerAnswer.error(status: 500, code: 5000001), .error(status: 404, code: 4040002),
                            .error(status: 404, code: 4040004), .error(status: 404, code: 4040006), .error(status: 503, code: 5000000)].enumerated() {
            let id = "20000009000001\(20 + i)"
            world.scriptTransaction(id, answers: [answer])
            try enqueueTransactionId("o-\(i)", id)
        }
        try world.writeConfig(receiptAPI: false, serverAPI: true, schedule: [("concurrency", .number(1))])
        let report = try pass()
        XCTAssertEqual(report.storeWideFailures[.appStore, default: 0], 5)
        for i in 0..<5 { XCTAssertEqual(try order("o-\(i)").attempts, 0) }
    }

    func testUnknownTransaction_isRetriedTwiceWithBackoff_thenRejectedAsNotFound() throws {
        try enqueueTransactionId("o-1", "2000000900000030")
        for expectedAttempts in 1...2 {
            _ = try pass()
            let o = try order("o-1")
            XCTAssertEqual(o.state, .pending)
            XCTAssertEqual(o.attempts, expectedAttempts)
            world.time.advance(by: 3600)
        }
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "transaction_not_found")
    }

    func test401InProductionThenNotFoundInSandbox_isNoNotFound_andNeverRejectsTheOrder() throws {
        let answers = Array(repeating: [SimulatedServerAnswer.unauthorized, .notFound], count: 4).flatMap { $0 }
        world.scriptTransaction("2000000900000031", answers: answers)
        try enqueueTransactionId("o-1", "2000000900000031")
        for _ in 0..<3 {
            _ = try pass()
            world.time.advance(by: 3600)
        }
        let o = try order("o-1")
        XCTAssertNotEqual(o.state, .rejected, "production could not be asked: Apple never said the purchase does not exist")
        XCTAssertTrue(o.lastError?.contains("401 in production") == true, o.lastError ?? "")
    }

    func testATransient4040010_afterDeliveryFailures_neverRejectsAnOrderHoldingItsGrant() throws {
        try world.writeConfig(hook: try world.hook("hook-fails.sh", exit: 1), receiptAPI: false, serverAPI: true,
                              schedule: [("max_attempts", .number(10))])
        world.scriptTransaction("2000000900000032", appAccountToken: token, answers: [.transaction, .transaction, .transaction, .notFound])
        try enqueueTransactionId("o-1", "2000000900000032")
        for _ in 0..<3 {
            _ = try pass()
            world.time.advance(by: 7200)
        }
        XCTAssertEqual(try order("o-1").attempts, 3, "three delivery failures")
        _ = try pass()
        let o = try order("o-1")
        XCTAssertNotEqual(o.state, .rejected, "a transient not found is no refund")
        XCTAssertEqual(o.state, .pending)
        XCTAssertEqual(try ledger.grantHolder(transactionId: "2000000900000032"), "o-1", "the order still holds its grant")
    }

    // MARK: - Legacy receipts without verifyReceipt

    func legacyReceipt(_ purchases: [AppReceipt.Purchase]) throws -> String {
        try AppReceiptBuilder.buildSignedByTestChain(bundleId: world.bundleId, purchases: purchases)
    }

    func customerTransaction(_ id: String, product: String? = nil, purchased: Int64) -> SimulatedSignedTransaction {
        SimulatedSignedTransaction(transactionId: id, productId: product ?? world.coins, bundleId: world.bundleId,
                                   environment: "Production", purchaseDateMs: purchased)
    }

    func testLegacyReceipt_withoutReceiptAPI_isReadLocallyAndVerifiedThroughTheCustomersHistory() throws {
        world.scriptCustomer([customerTransaction("2000000900000041", purchased: 2000),
                              customerTransaction("2000000900000040", purchased: 1000),
                              customerTransaction("2000000900000042", product: world.premium, purchased: 500)])
        let receipt = try legacyReceipt([
            AppReceipt.Purchase(productId: world.coins, transactionId: "2000000900000041"),
            AppReceipt.Purchase(productId: world.premium, transactionId: "2000000900000042"),
            AppReceipt.Purchase(productId: world.coins, transactionId: "2000000900000040"),
        ])
        for id in ["o-1", "o-2", "o-3"] {
            _ = try ledger.enqueue(NewOrder(orderId: id, userId: "u", productId: world.coins, receipt: receipt))
        }
        try world.writeConfig(receiptAPI: false, serverAPI: true, schedule: [("concurrency", .number(1))])
        let report = try pass()
        XCTAssertEqual(report.finished, 2)
        XCTAssertEqual(report.rejected, 1)
        XCTAssertEqual(Set(world.deliveries.map { String($0.split(separator: " ")[0]) }), ["2000000900000040", "2000000900000041"])
        XCTAssertEqual(world.deliveries.first?.hasPrefix("2000000900000040"), true, "the oldest first")
        XCTAssertTrue([try order("o-1"), try order("o-2"), try order("o-3")].contains { $0.reason == "already_granted" })
        // Three orders, one history request each (one page), no per-id lookups.
        XCTAssertEqual(world.simulator.historyRequests.count, 3)
        XCTAssertEqual(world.simulator.serverRequests.count, 0)
    }

    func testLegacyReceiptWith200Purchases_settlesTheOrderWhosePurchaseIsLast() throws {
        // 199 consumables already granted (outside settle) and, last, the purchase of the order:
        // more than the 20 ids a per-id lookup once read, and more than one history page.
        var transactions: [SimulatedSignedTransaction] = []
        var purchases: [AppReceipt.Purchase] = []
        for i in 0..<200 {
            let id = String(2_000_000_910_000_000 + i)
            let product = i == 199 ? world.premium : world.coins
            transactions.append(customerTransaction(id, product: product, purchased: Int64(1000 + i)))
            purchases.append(AppReceipt.Purchase(productId: product, transactionId: id))
        }
        world.scriptCustomer(transactions)
        _ = try ledger.enqueue(NewOrder(orderId: "o-premium", userId: "u", productId: world.premium,
                                        receipt: try legacyReceipt(purchases)))
        XCTAssertEqual(try pass().finished, 1)
        XCTAssertEqual(try order("o-premium").verified?.transactionId, "2000000910000199")
        XCTAssertEqual(world.simulator.historyRequests.count, 10, "200 purchases, 20 a page")
    }

    func testLegacyReceipt_historyPastThePageCap_needsAttention_neverRejected() throws {
        let transactions = (0..<21).map { customerTransaction(String(2_000_000_920_000_000 + $0), purchased: Int64($0)) }
        world.scriptCustomer(transactions)
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins,
                                        receipt: try legacyReceipt([AppReceipt.Purchase(productId: world.coins, transactionId: "2000000920000000")])))
        let configured = try world.reconciler(ledger: ledger)
        var appStore = try XCTUnwrap(configured.stores[.appStore] as? AppStoreAdapter)
        appStore.storeKit.historyPageCap = 1
        let reconciler = Reconciler(configuration: configured.configuration, ledger: ledger, deliverer: configured.deliverer,
                                    policy: configured.policy, log: configured.log, stores: [.appStore: appStore])
        XCTAssertEqual(try reconciler.runPass().needsAttention, 1)
        let o = try order("o-1")
        XCTAssertEqual(o.state, .needsAttention)
        XCTAssertEqual(o.reason, "history_incomplete")
        XCTAssertTrue(world.deliveries.isEmpty)
    }

    func testLegacyReceiptSignedByASelfMadeKey_isRejectedAsInvalid_withoutAskingApple() throws {
        world.scriptTransaction("2000000900000043")
        let forged = try AppReceiptBuilder.build(
            bundleId: world.bundleId, purchases: [AppReceipt.Purchase(productId: world.coins, transactionId: "2000000900000043")],
            creationDate: AppReceiptBuilder.testCreationDate,
            signerCertificatePEM: try String(contentsOfFile: TestWorld.fixture("apple/self-made/selfMade.pem"), encoding: .utf8),
            signerKeyPEM: try String(contentsOfFile: TestWorld.fixture("apple/self-made/selfMade.key"), encoding: .utf8))
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: forged))
        try world.writeConfig(receiptAPI: false, serverAPI: true)
        _ = try pass()
        let o = try order("o-1")
        XCTAssertEqual(o.reason, "receipt_invalid")
        XCTAssertTrue(o.lastError?.contains("receipt_chain_invalid") ?? false, o.lastError ?? "")
        XCTAssertEqual(world.simulator.serverRequests.count, 0, "a stranger's id is never looked up")
        XCTAssertEqual(world.deliveries, [])
    }

    func testLegacyReceiptSignedByADeveloperCertificateUnderWWDR_isRejected_andTheVictimsPurchasesAreNeverLookedUp() throws {
        // A leaf issued by the WWDR-like intermediate without the receipt marker: what any
        // developer holds the key of. It lists a victim's ids; the victim's purchases carry no token.
        world.scriptCustomer([customerTransaction("2000000900000044", purchased: 1000)])
        let forged = try AppReceiptBuilder.build(
            bundleId: world.bundleId, purchases: [AppReceipt.Purchase(productId: world.coins, transactionId: "2000000900000044")],
            creationDate: AppReceiptBuilder.testCreationDate,
            signerCertificatePEM: try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testInvalidOIDLeaf.pem"), encoding: .utf8),
            signerKeyPEM: try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testLeaf.key"), encoding: .utf8),
            chainPEM: [try String(contentsOfFile: TestWorld.fixture("apple/test-chain/testIntermediate.pem"), encoding: .utf8)])
        _ = try ledger.enqueue(NewOrder(orderId: "o-attacker", userId: "attacker", productId: world.coins, receipt: forged))
        _ = try pass()
        let o = try order("o-attacker")
        XCTAssertEqual(o.state, .rejected)
        XCTAssertEqual(o.reason, "receipt_invalid")
        XCTAssertTrue(o.lastError?.contains("receipt_chain_invalid") ?? false, o.lastError ?? "")
        XCTAssertEqual(world.simulator.historyRequests.count + world.simulator.serverRequests.count, 0)
        XCTAssertEqual(world.deliveries, [])
    }

    func testLegacyReceiptForAnotherBundle_isABundleMismatch_andNoIdFromItIsLookedUp() throws {
        world.scriptCustomer([customerTransaction("2000000900000045", purchased: 1000)])
        let receipt = try AppReceiptBuilder.buildSignedByTestChain(
            bundleId: "com.other.app", purchases: [AppReceipt.Purchase(productId: world.coins, transactionId: "2000000900000045")])
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins, receipt: receipt))
        _ = try pass()
        let o = try order("o-1")
        XCTAssertEqual(o.state, .rejected)
        XCTAssertEqual(o.reason, "bundle_mismatch")
        XCTAssertTrue(o.lastError?.contains("com.other.app") ?? false, o.lastError ?? "")
        XCTAssertEqual(world.simulator.historyRequests.count + world.simulator.serverRequests.count, 0)
        XCTAssertEqual(world.deliveries, [])
    }

    func testMissingReceiptRoot_withoutReceiptAPI_isAConfigurationError() throws {
        try FileManager.default.removeItem(atPath: world.folder + "/receipt-root.pem")
        try world.writeConfig(receiptAPI: false, serverAPI: true)
        XCTAssertThrowsError(try world.reconciler(ledger: ledger)) { error in
            XCTAssertTrue("\(error)".contains("server_api.receipt_root_certificates"), "\(error)")
        }
        try world.writeConfig(receiptAPI: true, serverAPI: true)
        XCTAssertNoThrow(try world.reconciler(ledger: ledger), "with receipt_api, Apple checks receipts")
    }

    func testLegacyReceiptThatIsNotAReceipt_isRejectedAsInvalid() throws {
        _ = try ledger.enqueue(NewOrder(orderId: "o-1", userId: "u", productId: world.coins,
                                        receipt: Data("not a pkcs7 receipt".utf8).base64EncodedString()))
        _ = try pass()
        XCTAssertEqual(try order("o-1").reason, "receipt_invalid")
    }

    // MARK: - Secrets

    func testNeitherTheKeyNorABearerTokenAppearsInLogsOrTheLedger() throws {
        world.scriptTransaction("2000000900000050")
        try enqueueTransactionId("o-1", "2000000900000050")
        try enqueueTransactionId("o-2", "2000000900000051")
        _ = try pass()
        let keyBody = try String(contentsOfFile: world.folder + "/appstore-key.p8", encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let token = try BearerTokenSource(issuerId: world.issuerId, keyId: world.keyId, bundleId: world.bundleId,
                                          key: world.signingKey, time: world.time).token()
        let tokenHeader = String(token.split(separator: ".")[0])
        let everything = logLines.lines.joined() + (try StatusView.json(ledger.orderRecord("o-1")!.order, history: ledger.orderRecord("o-1")!.history).serialized())
        XCTAssertFalse(everything.contains(String(keyBody.prefix(40))))
        XCTAssertFalse(everything.contains(tokenHeader), "no bearer token in logs or status")
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: world.ledgerPath + "-wal"))) ?? Data()
        XCTAssertNil(bytes.range(of: Data(tokenHeader.utf8)))
    }
}
