import Foundation
import SettleBase
import SettleModel
import SettleAppStore

/// An App Store Server Notification V2 as the simulator signs it (`ResponseBodyV2DecodedPayload`).
package struct SimulatedNotification: Sendable, Equatable {
    package var type: String
    package var subtype: String?
    package var uuid: String
    package var transaction: SimulatedSignedTransaction?
    package var bundleId: String
    package var environment: String
    package var appAppleId: Int64?
    package var consumptionRequestReason: String?
    package var signedDateMs: Int64
    package var body: Body

    /// Which object names the app, as Apple's shapes differ by type (Apple's library's test
    /// payloads `signedRescindConsentNotification.json`, `signedExternalPurchaseTokenNotification.json`).
    package enum Body: Sendable, Equatable {
        /// `data` (most types).
        case data
        /// `appData` with a signed AppTransaction and no `data` (RESCIND_CONSENT).
        case appData
        /// `externalPurchaseToken`, with no `data` and no environment (EXTERNAL_PURCHASE_TOKEN):
        /// Sandbox when the id starts with `SANDBOX`.
        case externalPurchaseToken(externalPurchaseId: String)
    }

    package init(type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(),
                transaction: SimulatedSignedTransaction?, bundleId: String, environment: String? = nil,
                appAppleId: Int64? = 1_234_567_890, consumptionRequestReason: String? = nil, signedDateMs: Int64,
                body: Body = .data) {
        self.body = body
        self.type = type
        self.subtype = subtype
        self.uuid = uuid
        self.transaction = transaction
        self.bundleId = bundleId
        self.environment = environment ?? transaction?.environment ?? "Production"
        self.appAppleId = appAppleId
        self.consumptionRequestReason = consumptionRequestReason
        self.signedDateMs = signedDateMs
    }

    package func payload() throws -> JSONValue {
        var data: [(String, JSONValue)] = [("bundleId", .string(bundleId)), ("bundleVersion", .string("1")),
                                           ("environment", .string(environment))]
        if let appAppleId { data.append(("appAppleId", .number(appAppleId))) }
        if let transaction { data.append(("signedTransactionInfo", .string(try transaction.signed(at: signedDateMs)))) }
        if let consumptionRequestReason { data.append(("consumptionRequestReason", .string(consumptionRequestReason))) }
        var members: [(String, JSONValue)] = [("notificationType", .string(type))]
        if let subtype { members.append(("subtype", .string(subtype))) }
        members += [("notificationUUID", .string(uuid)), ("version", .string("2.0")), ("signedDate", .number(signedDateMs))]
        switch body {
        case .data:
            members.append(("data", .object(data)))
        case .appData:
            var app: [(String, JSONValue)] = [("bundleId", .string(bundleId)), ("environment", .string(environment))]
            if let appAppleId { app.append(("appAppleId", .number(appAppleId))) }
            let appTransaction = try SimulatorSigningChain.sign(.object([
                ("receiptType", .string(environment)), ("bundleId", .string(bundleId)), ("applicationVersion", .string("1")),
                ("appTransactionId", .string("704000000000001")), ("signedDate", .number(signedDateMs)),
            ]))
            app.append(("signedAppTransactionInfo", .string(appTransaction)))
            members.append(("appData", .object(app)))
        case let .externalPurchaseToken(id):
            var token: [(String, JSONValue)] = [("externalPurchaseId", .string(id)), ("tokenCreationDate", .number(signedDateMs))]
            if let appAppleId { token.append(("appAppleId", .number(appAppleId))) }
            token.append(("bundleId", .string(bundleId)))
            members.append(("externalPurchaseToken", .object(token)))
        }
        return .object(members)
    }

    /// The `signedPayload`, signed with `SimulatorSigningChain`.
    package func signed() throws -> String { try SimulatorSigningChain.sign(try payload()) }
}

extension AppleSimulator {
    /// One Get Notification History request as the simulator saw it.
    package struct NotificationHistoryRequest: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var startDate: Int64?
        package var endDate: Int64?
        package var paginationToken: String?
        package var tokenProblem: String?
    }

    /// One Send Consumption Information request as the simulator saw it.
    package struct ConsumptionRequest: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var transactionId: String
        package var body: JSONValue?
        package var tokenProblem: String?
    }

    /// One Finish Transaction request as the simulator saw it.
    package struct FinishRequest: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var transactionId: String
        package var tokenProblem: String?
    }

    /// Answers for the next Finish Transaction requests, one each (`.transaction`: 200).
    package func script(finish answers: [SimulatedServerAnswer]) {
        core.state.withLock { $0.finishAnswers += answers }
    }

    package var finishRequests: [FinishRequest] { core.state.withLock { $0.finishRequests } }

    /// Notifications per history page (Apple does not document it; small enough to page in tests).
    package static let notificationPageSize = 20

    /// Apple sends `notification`: recorded for Get Notification History, then POSTed to `url`
    /// as `{"signedPayload": ...}`. Returns the HTTP status, nil when nothing answered (the
    /// endpoint down): Apple still has it in its history, as the real one does.
    @discardableResult
    package func send(_ notification: SimulatedNotification, to url: String?) throws -> Int? {
        let signed = try notification.signed()
        record(signedPayload: signed, environment: notification.environment, signedDateMs: notification.signedDateMs)
        guard let url else { return nil }
        return Self.post(signedPayload: signed, to: url)
    }

    /// POSTs a `signedPayload` as Apple does; nil when nothing answered.
    package static func post(signedPayload: String, to url: String) -> Int? {
        let client = HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, totalTimeout: 10))
        let body = JSONValue.object([("signedPayload", .string(signedPayload))]).data
        return try? client.send(HTTPRequest(method: "POST", url: url, headers: [HTTPHeader("Content-Type", "application/json")],
                                            body: body)).status
    }

    package func record(signedPayload: String, environment: String, signedDateMs: Int64) {
        core.state.withLock { $0.sentNotifications[environment, default: []].append((signedDateMs, signedPayload)) }
    }

    /// Answers for the next Get Notification History requests, one each (`.transaction`: answer normally).
    package func script(notificationHistory answers: [SimulatedServerAnswer]) {
        core.state.withLock { $0.notificationHistoryAnswers += answers }
    }

    /// Answers for the next Send Consumption Information requests, one each (`.transaction`: 202).
    package func script(consumption answers: [SimulatedServerAnswer]) {
        core.state.withLock { $0.consumptionAnswers += answers }
    }

    package var notificationHistoryRequests: [NotificationHistoryRequest] { core.state.withLock { $0.notificationHistoryRequests } }
    package var consumptionRequests: [ConsumptionRequest] { core.state.withLock { $0.consumptionRequests } }
}

extension AppleSimulatorCore {
    /// Get Notification History and Send Consumption Information; nil for other paths.
    package func notificationRoute(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        for (prefix, environment) in [("/production", AppleEnvironment.production), ("/sandbox", .sandbox)] {
            if request.method == "POST", request.path.hasPrefix(prefix + "/inApps/v1/notifications/history") {
                return notificationHistory(request, environment: environment)
            }
            let transactions = prefix + "/inApps/v1/transactions/"
            if request.method == "POST", request.path.hasPrefix(transactions), request.path.hasSuffix("/finish") {
                let id = String(request.path.dropFirst(transactions.count).dropLast("/finish".count))
                return finishTransaction(id, request: request, environment: environment)
            }
            let consumption = prefix + "/inApps/v2/transactions/consumption/"
            if request.method == "PUT", request.path.hasPrefix(consumption) {
                return consumptionInformation(String(request.path.dropFirst(consumption.count)), request: request, environment: environment)
            }
        }
        return nil
    }

    private func problem(_ request: HTTPServerRequest) -> String? {
        credentials.map { $0.problem(with: request.header("Authorization"), now: time.unixSeconds) } ?? "the simulator has no Server API credentials"
    }

    private func notificationHistory(_ request: HTTPServerRequest, environment: AppleEnvironment) -> HTTPServerResponse {
        let problem = problem(request)
        let body = try? JSONValue.parse(request.body)
        let token = request.path.split(separator: "?", maxSplits: 1).dropFirst().first.flatMap { query in
            query.split(separator: "&").first { $0.hasPrefix("paginationToken=") }
                .map { String($0.dropFirst("paginationToken=".count)).removingPercentEncoding ?? "" }
        }
        let start = body?["startDate"]?.looseInt64, end = body?["endDate"]?.looseInt64
        let (answer, sent) = state.withLock { s -> (SimulatedServerAnswer, [(signedDateMs: Int64, signedPayload: String)]) in
            s.notificationHistoryRequests.append(.init(environment: environment, startDate: start, endDate: end,
                                                       paginationToken: token, tokenProblem: problem))
            guard problem == nil else { return (.unauthorized, []) }
            let next = s.notificationHistoryAnswers.isEmpty ? SimulatedServerAnswer.transaction : s.notificationHistoryAnswers.removeFirst()
            return (next, s.sentNotifications[environment.rawValue] ?? [])
        }
        if let failure = Self.scriptedFailure(answer, notFound: "Not found.") { return failure }
        guard let start, let end, start < end else { return Self.apiError(400, 4000015, "Invalid start date.") }
        let inWindow = sent.filter { $0.signedDateMs >= start && $0.signedDateMs < end }
        var offset = 0
        if let token {
            guard let decoded = Data(base64Encoded: token).flatMap({ String(data: $0, encoding: .utf8) }).flatMap(Int.init),
                  decoded > 0, decoded < inWindow.count else { return Self.apiError(400, 4000014, "Invalid pagination token.") }
            offset = decoded
        }
        let stop = min(offset + AppleSimulator.notificationPageSize, inWindow.count)
        var members: [(String, JSONValue)] = [
            ("notificationHistory", .array(inWindow[offset..<stop].map { .object([("signedPayload", .string($0.signedPayload))]) })),
            ("hasMore", .bool(stop < inWindow.count)),
        ]
        if stop < inWindow.count { members.append(("paginationToken", .string(Data(String(stop).utf8).base64EncodedString()))) }
        return .json(200, JSONValue.object(members).data)
    }

    /// Finish Transaction (API 1.20): 200 with no body for a transaction this environment knows.
    private func finishTransaction(_ id: String, request: HTTPServerRequest, environment: AppleEnvironment) -> HTTPServerResponse {
        let problem = problem(request)
        let (answer, known) = state.withLock { s -> (SimulatedServerAnswer, Bool) in
            s.finishRequests.append(.init(environment: environment, transactionId: id, tokenProblem: problem))
            guard problem == nil else { return (.unauthorized, false) }
            let known = ([s.transactions[id]?.transaction] + s.customers.flatMap { $0.transactions.map(Optional.some) })
                .contains { $0?.transactionId == id && $0?.environment == environment.rawValue }
            return (s.finishAnswers.isEmpty ? .transaction : s.finishAnswers.removeFirst(), known)
        }
        if let failure = Self.scriptedFailure(answer, notFound: "Transaction id not found.") { return failure }
        return known ? HTTPServerResponse(status: 200) : Self.apiError(404, 4040010, "Transaction id not found.")
    }

    private func consumptionInformation(_ id: String, request: HTTPServerRequest, environment: AppleEnvironment) -> HTTPServerResponse {
        let problem = problem(request)
        let answer = state.withLock { s -> SimulatedServerAnswer in
            s.consumptionRequests.append(.init(environment: environment, transactionId: id, body: try? JSONValue.parse(request.body),
                                               tokenProblem: problem))
            guard problem == nil else { return .unauthorized }
            return s.consumptionAnswers.isEmpty ? .transaction : s.consumptionAnswers.removeFirst()
        }
        if let failure = Self.scriptedFailure(answer, notFound: "Transaction id not found.") { return failure }
        if let refused = SimulatedConsumptionRequest.problem(try? JSONValue.parse(request.body)) {
            return Self.apiError(400, refused.code, refused.message)
        }
        return HTTPServerResponse(status: 202)
    }
}
