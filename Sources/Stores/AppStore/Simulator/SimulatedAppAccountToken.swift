import Foundation
import SettleBase
import SettleModel
import SettleAppStore

extension AppleSimulator {
    /// One Set App Account Token request as the simulator saw it.
    package struct AppAccountTokenRequest: Sendable, Equatable {
        package var environment: AppleEnvironment
        package var originalTransactionId: String
        /// The body's `appAccountToken`, as sent.
        package var appAccountToken: String?
        package var tokenProblem: String?
    }

    /// Answers for the next Set App Account Token requests, one each (`.transaction`: answer as Apple would).
    package func script(appAccountToken answers: [SimulatedServerAnswer]) {
        core.state.withLock { $0.appAccountTokenAnswers += answers }
    }

    package var appAccountTokenRequests: [AppAccountTokenRequest] { core.state.withLock { $0.appAccountTokenRequests } }

    /// `takes` runs before each Set App Account Token answer (a test's clock advanced: a slow Apple).
    package func slowAppAccountToken(_ takes: @escaping @Sendable () -> Void) {
        core.state.withLock { $0.appAccountTokenTakes = takes }
    }
}

extension AppleSimulatorCore {
    /// Set App Account Token (API 1.16): `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
    /// with `{"appAccountToken": UUID}`; nil for other paths. As Apple: 4000183 for a token that
    /// is not a UUID, 4000187 for an id that is not an original transaction id, 4000185 for a
    /// family member's shared purchase, 4040010 for an unknown one, else 200 with no body, and
    /// the scripted transaction carries the token from then on.
    /// https://developer.apple.com/documentation/appstoreserverapi/set-app-account-token
    package func appAccountTokenRoute(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        guard request.method == "PUT", request.path.hasSuffix("/appAccountToken") else { return nil }
        for (prefix, environment) in [("/production/inApps/v1/transactions/", AppleEnvironment.production),
                                      ("/sandbox/inApps/v1/transactions/", .sandbox)] where request.path.hasPrefix(prefix) {
            let id = String(request.path.dropFirst(prefix.count).dropLast("/appAccountToken".count))
            return setAppAccountToken(id, request: request, environment: environment)
        }
        return nil
    }

    private func setAppAccountToken(_ id: String, request: HTTPServerRequest, environment: AppleEnvironment) -> HTTPServerResponse {
        let problem = credentials.map { $0.problem(with: request.header("Authorization"), now: time.unixSeconds) }
            ?? "the simulator has no Server API credentials"
        let token = (try? JSONValue.parse(request.body))?["appAccountToken"]?.looseString
        state.withLock { $0.appAccountTokenTakes }?()
        let answer = state.withLock { s -> SimulatedServerAnswer in
            s.appAccountTokenRequests.append(.init(environment: environment, originalTransactionId: id, appAccountToken: token,
                                                   tokenProblem: problem))
            guard problem == nil else { return .unauthorized }
            return s.appAccountTokenAnswers.isEmpty ? .transaction : s.appAccountTokenAnswers.removeFirst()
        }
        if let failure = Self.scriptedFailure(answer, notFound: "Transaction id not found.") { return failure }
        guard let token, UUID(uuidString: token) != nil else {
            return Self.apiError(400, 4000183, "Invalid request. The app account token field must be a valid UUID.")
        }
        return state.withLock { s in
            guard var script = s.transactions[id], var transaction = script.transaction, transaction.environment == environment.rawValue else {
                return Self.apiError(404, 4040010, "Transaction id not found.")
            }
            if (transaction.originalTransactionId ?? id) != id {
                return Self.apiError(400, 4000187, "Invalid request. The transaction id is not an original transaction id.")
            }
            if transaction.inAppOwnershipType == "FAMILY_SHARED" {
                return Self.apiError(400, 4000185, "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
            }
            transaction.appAccountToken = token.lowercased()
            script.transaction = transaction
            s.transactions[id] = script
            return HTTPServerResponse(status: 200)
        }
    }
}
