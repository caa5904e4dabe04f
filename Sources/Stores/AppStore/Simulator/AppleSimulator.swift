import Foundation
import Synchronization
import SettleBase
import SettleModel
import SettleAppStore
import SettleSimulator

/// A local stand-in for Apple on loopback, for tests and `settle demo`.
///
/// `POST /{production,sandbox}/verifyReceipt` answer per receipt as scripted;
/// `GET /{production,sandbox}/inApps/v1/transactions/{id}` is the App Store Server API's Get
/// Transaction Info, and `GET /{production,sandbox}/inApps/v2/history/{id}` Get Transaction
/// History v2 over scripted customers, both checking each bearer token and signing their answers
/// with `SimulatorSigningChain`. Nothing in settle talks to it unless a configuration points there.
package final class AppleSimulator: Sendable {
    /// One request as the simulator saw it (never the shared secret itself).
    package struct Request: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var receiptData: String?
        package var passwordMatched: Bool
        package var excludeOldTransactions: Bool?
    }

    /// One Server API request as the simulator saw it.
    package struct ServerRequest: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var transactionId: String
        /// Why the bearer token was refused, nil when it was good.
        package var tokenProblem: String?
    }

    /// One Get Transaction History request as the simulator saw it.
    package struct HistoryRequest: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var transactionId: String
        /// The `revision` query parameter, nil on a first page.
        package var revision: String?
        package var sort: String?
        /// Why the bearer token was refused, nil when it was good.
        package var tokenProblem: String?
    }

    package let core: AppleSimulatorCore
    private let server: LoopbackHTTPServer

    /// Listens on 127.0.0.1:`port` (0: any free port; the standalone `settle simulator` picks one).
    /// `front` answers first when it answers (the standalone simulator's faults).
    package init(sharedSecret: String, credentials: ServerAPICredentials? = nil, time: any TimeSource = SystemTimeSource(),
                port: UInt16 = 0, front: (@Sendable (HTTPServerRequest) -> HTTPServerResponse?)? = nil) throws {
        let core = AppleSimulatorCore(sharedSecret: sharedSecret, credentials: credentials, time: time)
        self.core = core
        server = try LoopbackHTTPServer(port: port) { request in front?(request) ?? core.handle(request) }
    }

    /// "http://127.0.0.1:<port>"
    package var baseURL: String { server.baseURL }

    deinit { server.stop() }

    package var productionURL: String { server.baseURL + "/production/verifyReceipt" }
    package var sandboxURL: String { server.baseURL + "/sandbox/verifyReceipt" }
    /// Base URLs of the simulated App Store Server API.
    package var serverProductionURL: String { server.baseURL + "/production" }
    package var serverSandboxURL: String { server.baseURL + "/sandbox" }

    package func stop() { server.stop() }

    /// Enforces `limit` on the Server API from now on (issue 27's benchmark); its counts are
    /// served at `GET /simulator/rate_limits`.
    package func limit(_ limit: SimulatedRateLimit) { core.rateLimit.withLock { $0 = limit } }

    /// Scripts the answers for a receipt (its base64 text as sent in `receipt-data`).
    package func script(_ receiptData: String, _ script: ReceiptScript) {
        core.state.withLock { $0.scripts[receiptData] = script }
    }

    package var requests: [Request] { core.state.withLock { $0.requests } }

    package func requests(for receiptData: String) -> [Request] { requests.filter { $0.receiptData == receiptData } }

    /// Scripts the Server API's answers for a transaction id.
    package func script(transaction id: String, _ script: TransactionScript) {
        core.state.withLock { $0.transactions[id] = script }
    }

    package var serverRequests: [ServerRequest] { core.state.withLock { $0.serverRequests } }

    /// Scripts a customer for Get Transaction History: the history of any of their transaction
    /// ids is all of `transactions` in this order, 20 to a page. `answers` are used one per
    /// history request first (`.transaction` meaning "answer normally").
    package func script(customer transactions: [SimulatedSignedTransaction], answers: [SimulatedServerAnswer] = []) {
        core.state.withLock { $0.customers.append(CustomerScript(transactions: transactions, answers: answers)) }
    }

    package var historyRequests: [HistoryRequest] { core.state.withLock { $0.historyRequests } }

    /// Scripts Look Up Order ID: the order id of a customer's receipt email and its purchases.
    package func script(appleOrder orderId: String, _ transactions: [SimulatedSignedTransaction]) {
        core.state.withLock { $0.appleOrders[orderId] = transactions }
    }

    /// Connections clients opened to the simulator (HTTP/1.1 keep-alive lets one carry many requests).
    package var acceptedConnections: Int { server.acceptedConnections }

    /// Every request as "METHOD /path" in the order it arrived, for tests of which call came first.
    package var arrivals: [String] { core.state.withLock { $0.arrivals } }

    /// The most requests that were being answered at the same time.
    package var peakConcurrentRequests: Int { core.state.withLock { $0.peakInFlight } }
}

/// A customer's transactions and the answers still to give for their history.
package struct CustomerScript {
    package var transactions: [SimulatedSignedTransaction]
    package var answers: [SimulatedServerAnswer]
}

/// The simulator's scripts and request log, and the request handling, shared with the server's threads.
package final class AppleSimulatorCore: Sendable {
    package struct State {
        package var customers: [CustomerScript] = []
        package var appleOrders: [String: [SimulatedSignedTransaction]] = [:]
        package var historyRequests: [AppleSimulator.HistoryRequest] = []
        package var scripts: [String: ReceiptScript] = [:]
        package var requests: [AppleSimulator.Request] = []
        package var transactions: [String: TransactionScript] = [:]
        package var serverRequests: [AppleSimulator.ServerRequest] = []
        package var inFlight = 0
        package var peakInFlight = 0
        /// Every request as "METHOD /path", in the order they arrived (which call came first).
        package var arrivals: [String] = []
        /// Every notification Apple "sent", per environment: what Get Notification History serves.
        package var sentNotifications: [String: [(signedDateMs: Int64, signedPayload: String)]] = [:]
        package var notificationHistoryAnswers: [SimulatedServerAnswer] = []
        package var notificationHistoryRequests: [AppleSimulator.NotificationHistoryRequest] = []
        package var consumptionAnswers: [SimulatedServerAnswer] = []
        package var consumptionRequests: [AppleSimulator.ConsumptionRequest] = []
        package var appAccountTokenAnswers: [SimulatedServerAnswer] = []
        package var appAccountTokenRequests: [AppleSimulator.AppAccountTokenRequest] = []
        /// Called before each Set App Account Token answer: a test advances its clock here to make
        /// Apple slow (or wait out the client's timeout) without sleeping.
        package var appAccountTokenTakes: (@Sendable () -> Void)?
        package var finishAnswers: [SimulatedServerAnswer] = []
        package var finishRequests: [AppleSimulator.FinishRequest] = []
    }

    package let state = Mutex(State())
    /// The rate limit the Server API enforces, nil for none (`limit(_:)`).
    package let rateLimit = Mutex<SimulatedRateLimit?>(nil)
    package let sharedSecret: String
    package let credentials: ServerAPICredentials?
    package let time: any TimeSource

    package init(sharedSecret: String, credentials: ServerAPICredentials?, time: any TimeSource) {
        self.sharedSecret = sharedSecret
        self.credentials = credentials
        self.time = time
    }

    package func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        state.withLock { s in
            s.inFlight += 1
            s.peakInFlight = max(s.peakInFlight, s.inFlight)
            s.arrivals.append("\(request.method) \(request.path)")
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        if let limit = rateLimit.withLock({ $0 }) {
            if request.method == "GET", request.path == SimulatedRateLimit.countsPath { return .json(200, limit.json.data) }
            // verifyReceipt publishes no limit: only an outage refuses it, unless the limit gives
            // it a rate of its own (`groupRates["verify_receipt"]`), one settle must learn.
            let group = SimulatedRateLimit.appleGroup(method: request.method, path: request.path)
            let limited = group != nil || limit.groupRates[AppStoreRateGroups.verifyReceipt] != nil
            let decision = limit.admit(group ?? AppStoreRateGroups.verifyReceipt, limited: limited)
            if let refusal = limit.appleRefusal(decision) { return refusal }
        }
        if let response = notificationRoute(request) { return response }
        if let response = appAccountTokenRoute(request) { return response }
        for (prefix, name) in [("/production/inApps/v2/history/", AppleEnvironment.production), ("/sandbox/inApps/v2/history/", .sandbox)]
            where request.method == "GET" && request.path.hasPrefix(prefix) {
            return history(String(request.path.dropFirst(prefix.count)), environment: name, authorization: request.header("Authorization"))
        }
        for (prefix, name) in [("/production/inApps/v1/lookup/", AppleEnvironment.production), ("/sandbox/inApps/v1/lookup/", .sandbox)]
            where request.method == "GET" && request.path.hasPrefix(prefix) {
            return lookUpOrder(String(request.path.dropFirst(prefix.count)), environment: name, authorization: request.header("Authorization"))
        }
        for (prefix, name) in [("/production/inApps/v1/transactions/", AppleEnvironment.production), ("/sandbox/inApps/v1/transactions/", .sandbox)]
            where request.method == "GET" && request.path.hasPrefix(prefix) {
            return transactionInfo(String(request.path.dropFirst(prefix.count)), environment: name,
                                   authorization: request.header("Authorization"))
        }
        let environment: AppleEnvironment
        switch (request.method, request.path) {
        case ("POST", "/production/verifyReceipt"): environment = .production
        case ("POST", "/sandbox/verifyReceipt"): environment = .sandbox
        default: return HTTPServerResponse(status: 404, body: Data("not found".utf8))
        }
        guard let json = try? JSONValue.parse(request.body), json.objectMembers != nil else {
            return .json(200, Self.status(21000))
        }
        let receiptData = json["receipt-data"]?.looseString
        let passwordMatched = json["password"]?.looseString == sharedSecret
        let answer: SimulatedAnswer
        let script: ReceiptScript?
        (answer, script) = state.withLock { s in
            s.requests.append(AppleSimulator.Request(environment: environment, receiptData: receiptData, passwordMatched: passwordMatched,
                                      excludeOldTransactions: json["exclude-old-transactions"]?.looseBool))
            guard let data = receiptData, var script = s.scripts[data] else { return (.receipt, nil) }
            let next = script.answers.isEmpty ? SimulatedAnswer.receipt : script.answers.removeFirst()
            s.scripts[data] = script
            return (next, script)
        }
        return respond(answer, script: script, receiptData: receiptData, environment: environment, passwordMatched: passwordMatched)
    }

    private func respond(_ answer: SimulatedAnswer, script: ReceiptScript?, receiptData: String?, environment: AppleEnvironment,
                         passwordMatched: Bool) -> HTTPServerResponse {
        switch answer {
        case let .status(code, retryable, underscore):
            var members: [(String, JSONValue)] = [("status", .number(code)), ("environment", .string(environment.rawValue))]
            if let retryable { members.append((underscore ? "is_retryable" : "is-retryable", .bool(retryable))) }
            return .json(200, JSONValue.object(members).data)
        case let .http(code, retryAfter):
            return HTTPServerResponse(status: code, headers: retryAfter.map { [HTTPHeader("Retry-After", $0)] } ?? [],
                                      body: Data("<html><body>\(code) Service Unavailable</body></html>".utf8))
        case .garbage:
            return HTTPServerResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/html")],
                                      body: Data("<html>upstream error \u{0}\u{1}{{{".utf8))
        case let .huge(bytes):
            let padding = String(repeating: "x", count: max(0, bytes - 40))
            return .json(200, Data("{\"status\":0,\"padding\":\"\(padding)\"}".utf8))
        case let .slow(seconds):
            Thread.sleep(forTimeInterval: seconds)
            return respond(.receipt, script: script, receiptData: receiptData, environment: environment,
                           passwordMatched: passwordMatched)
        case let .transactionReceipt(status):
            guard passwordMatched else { return .json(200, Self.status(21004)) }
            guard let receipt = script?.receipt, let first = receipt.inApp.first else { return .json(200, Self.status(21003)) }
            var members: [(String, JSONValue)] = [("status", .number(status)), ("environment", .string(receipt.environment)),
                                                  ("receipt", first.legacyJSON(bundleId: receipt.bundleId))]
            if let latest = receipt.latestReceiptInfo.last {
                members.append((status == 21006 ? "latest_expired_receipt_info" : "latest_receipt_info",
                                latest.legacyJSON(bundleId: receipt.bundleId)))
            }
            return .json(200, JSONValue.object(members).data)
        case .receipt:
            guard let data = receiptData, Data(base64Encoded: data) != nil else { return .json(200, Self.status(21002)) }
            guard passwordMatched else { return .json(200, Self.status(21004)) }
            guard let receipt = script?.receipt else { return .json(200, Self.status(21003)) }
            if receipt.environment == "Sandbox" && environment == .production { return .json(200, Self.status(21007)) }
            if receipt.environment == "Production" && environment == .sandbox { return .json(200, Self.status(21008)) }
            return .json(200, Self.validAnswer(receipt, receiptData: data))
        }
    }

    /// Get Transaction Info: checks the bearer token, then answers as scripted.
    private func transactionInfo(_ id: String, environment: AppleEnvironment, authorization: String?) -> HTTPServerResponse {
        let now = time.unixSeconds
        let problem = credentials.map { $0.problem(with: authorization, now: now) } ?? "the simulator has no Server API credentials"
        let (answer, script) = state.withLock { s -> (SimulatedServerAnswer, TransactionScript?) in
            s.serverRequests.append(AppleSimulator.ServerRequest(environment: environment, transactionId: id, tokenProblem: problem))
            guard problem == nil else { return (.unauthorized, nil) }
            guard var script = s.transactions[id] else { return (.notFound, nil) }
            let next = script.answers.isEmpty ? SimulatedServerAnswer.transaction : script.answers.removeFirst()
            s.transactions[id] = script
            return (next, script)
        }
        let apiError = Self.apiError
        switch answer {
        case .unauthorized:
            return HTTPServerResponse(status: 401)
        case .notFound:
            return apiError(404, 4040010, "Transaction id not found.")
        case let .rateLimited(retryAfter):
            var response = apiError(429, 4290000, "Rate limit exceeded.")
            response.headers.append(HTTPHeader("Retry-After", retryAfter))
            return response
        case let .error(status, code):
            return apiError(status, code, "Simulated error.")
        case .transaction:
            guard let transaction = script?.transaction, transaction.environment == environment.rawValue
                    || (environment == .sandbox && transaction.environment != "Production") else {
                return apiError(404, 4040010, "Transaction id not found.")
            }
            guard let signed = try? transaction.signed(at: now * 1000) else { return HTTPServerResponse(status: 500) }
            return .json(200, JSONValue.object([("signedTransactionInfo", .string(signed))]).data)
        }
    }

    /// Look Up Order ID: status 0 with the order's signed transactions in their environment, else status 1.
    private func lookUpOrder(_ orderId: String, environment: AppleEnvironment, authorization: String?) -> HTTPServerResponse {
        let now = time.unixSeconds
        let problem = credentials.map { $0.problem(with: authorization, now: now) } ?? "the simulator has no Server API credentials"
        guard problem == nil else { return HTTPServerResponse(status: 401) }
        let transactions = state.withLock { $0.appleOrders[orderId] ?? [] }.filter { $0.environment == environment.rawValue }
        guard !transactions.isEmpty else { return .json(200, JSONValue.object([("status", .number(1))]).data) }
        let signed = transactions.compactMap { try? $0.signed(at: now * 1000) }.map { JSONValue.string($0) }
        return .json(200, JSONValue.object([("status", .number(0)), ("signedTransactions", .array(signed))]).data)
    }

    /// The answer a scripted failure stands for (401, Apple's 404, a 429 with Retry-After, a
    /// scripted error); nil for `.transaction`, the endpoint's own answer.
    package static func scriptedFailure(_ answer: SimulatedServerAnswer, notFound: String) -> HTTPServerResponse? {
        switch answer {
        case .unauthorized: return HTTPServerResponse(status: 401)
        case .notFound: return apiError(404, 4040010, notFound)
        case let .rateLimited(retryAfter):
            var response = apiError(429, 4290000, "Rate limit exceeded.")
            response.headers.append(HTTPHeader("Retry-After", retryAfter))
            return response
        case let .error(status, code): return apiError(status, code, "Simulated error.")
        case .transaction: return nil
        }
    }

    package static func apiError(_ status: Int, _ code: Int, _ message: String) -> HTTPServerResponse {
        .json(status, JSONValue.object([("errorCode", .number(code)), ("errorMessage", .string(message))]).data)
    }

    /// Get Transaction History v2: checks the bearer token, then pages the customer's transactions.
    private func history(_ target: String, environment: AppleEnvironment, authorization: String?) -> HTTPServerResponse {
        let now = time.unixSeconds
        let problem = credentials.map { $0.problem(with: authorization, now: now) } ?? "the simulator has no Server API credentials"
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        let id = parts.first ?? ""
        var query: [String: String] = [:]
        for pair in (parts.count > 1 ? parts[1] : "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            query[kv[0]] = kv.count > 1 ? kv[1].removingPercentEncoding : ""
        }
        let (answer, customer) = state.withLock { s -> (SimulatedServerAnswer, (index: Int, transactions: [SimulatedSignedTransaction])?) in
            s.historyRequests.append(AppleSimulator.HistoryRequest(environment: environment, transactionId: id, revision: query["revision"],
                                                                   sort: query["sort"], tokenProblem: problem))
            guard problem == nil else { return (.unauthorized, nil) }
            guard let index = s.customers.firstIndex(where: { $0.transactions.contains { t in
                t.transactionId == id || t.originalTransactionId == id } }) else { return (.notFound, nil) }
            let next = s.customers[index].answers.isEmpty ? SimulatedServerAnswer.transaction : s.customers[index].answers.removeFirst()
            return (next, (index, s.customers[index].transactions))
        }
        switch answer {
        case .unauthorized:
            return HTTPServerResponse(status: 401)
        case .notFound:
            return Self.apiError(404, 4040010, "Transaction id not found.")
        case let .rateLimited(retryAfter):
            var response = Self.apiError(429, 4290000, "Rate limit exceeded.")
            response.headers.append(HTTPHeader("Retry-After", retryAfter))
            return response
        case let .error(status, code):
            return Self.apiError(status, code, "Simulated error.")
        case .transaction:
            guard let (index, transactions) = customer, let first = transactions.first,
                  first.environment == environment.rawValue || (environment == .sandbox && first.environment != "Production") else {
                return Self.apiError(404, 4040010, "Transaction id not found.")
            }
            // The revision is opaque to clients: which customer and how far, in base64.
            var offset = 0
            if let revision = query["revision"] {
                let fields = Data(base64Encoded: revision).flatMap { String(data: $0, encoding: .utf8) }?.split(separator: ":")
                guard let fields, fields.count == 2, Int(fields[0]) == index, let at = Int(fields[1]), at > 0, at < transactions.count else {
                    return Self.apiError(400, 4000014, "Invalid pagination token.")
                }
                offset = at
            }
            let end = min(offset + AppStoreServerClient.historyPageSize, transactions.count)
            var signed: [JSONValue] = []
            for transaction in transactions[offset..<end] {
                guard let jws = try? transaction.signed(at: now * 1000) else { return HTTPServerResponse(status: 500) }
                signed.append(.string(jws))
            }
            return .json(200, JSONValue.object([
                ("revision", .string(Data("\(index):\(end)".utf8).base64EncodedString())),
                ("bundleId", .string(first.bundleId)),
                ("appAppleId", .number(1_234_567_890)),
                ("environment", .string(first.environment)),
                ("hasMore", .bool(end < transactions.count)),
                ("signedTransactions", .array(signed)),
            ]).data)
        }
    }

    package static func status(_ code: Int) -> Data { JSONValue.object([("status", .number(code))]).data }

    package static func validAnswer(_ receipt: SimulatedReceipt, receiptData: String) -> Data {
        var members: [(String, JSONValue)] = [
            ("receipt", .object([
                ("receipt_type", .string(receipt.environment == "Sandbox" ? "ProductionSandbox" : "Production")),
                ("adam_id", .number(receipt.environment == "Sandbox" ? 0 : 1_234_567_890)),
                ("app_item_id", .number(receipt.environment == "Sandbox" ? 0 : 1_234_567_890)),
                ("bundle_id", .string(receipt.bundleId)),
                ("application_version", .string("42")),
                // Larger than 2^53, as Apple has been seen to send.
                ("download_id", .number("500935934584949200")),
                ("version_external_identifier", .number(0)),
                ("receipt_creation_date_ms", .string("1764410645000")),
                ("in_app", .array(receipt.inApp.map { $0.json() })),
            ])),
            ("environment", .string(receipt.environment)),
            ("status", .number(0)),
        ]
        if !receipt.latestReceiptInfo.isEmpty {
            members.insert(("latest_receipt_info", .array(receipt.latestReceiptInfo.map { $0.json() })), at: 1)
            members.insert(("latest_receipt", .string(receiptData)), at: 1)
        }
        return JSONValue.object(members).data
    }
}
