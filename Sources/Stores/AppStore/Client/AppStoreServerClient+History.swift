import Foundation
import SettleBase
import SettleModel

/// Every transaction of one customer, as Get Transaction History v2 pages them: the raw JWS
/// strings (each still to be verified, apple-protocol.md 2.7) and the environment that had them.
/// https://developer.apple.com/documentation/appstoreserverapi/historyresponse
package struct TransactionHistory: Sendable, Equatable {
    /// `signedTransactions` of every page in order. Sorted ASCENDING by modification, so a
    /// transaction updated while paging (an upgrade, a refund) appears again, newer, later.
    package var signedTransactions: [String]
    package var environment: AppleEnvironment
    package var bundleId: String?
    package var appAppleId: String?
    /// The last page's revision: where a later ASCENDING query could resume.
    package var revision: String?
    /// Requests it took, counting any restart.
    package var pages: Int
}

extension AppStoreServerClient {
    /// What Apple said about one customer's history.
    package enum HistoryLookup: Sendable, Equatable {
        case found(TransactionHistory)
        /// Neither environment knows the id.
        case notFound(String)
        /// Apple refused the id itself (e.g. 4000006 invalid transaction id).
        case invalidId(String)
        /// The history runs past `maxPages` pages: a bound on what one order can cost, not
        /// something Apple did wrong, so not worth retrying as is.
        case pageCapExceeded(String)
        /// Anything else, classified as for Get Transaction Info.
        case failed(VerificationOutcome)
    }

    /// Apple sends at most this many transactions per page.
    package static let historyPageSize = 20

    /// Pages through all the transactions of the customer that `anyTransactionId` belongs to
    /// (GET /inApps/v2/history/{id}, `sort=ASCENDING`, following `revision` while `hasMore`),
    /// production first with the same environment rule and error classes as `transactionInfo`.
    /// An expired or refused revision (4000014, 4000017) restarts paging once.
    /// https://developer.apple.com/documentation/appstoreserverapi/get-transaction-history
    package func transactionHistory(_ anyTransactionId: String, maxPages: Int = 500) -> (lookup: HistoryLookup, storeAnswered: Bool) {
        var capExceeded: String?
        let (routed, answered) = route(anyTransactionId) { environment -> Answer<TransactionHistory> in
            let (answer, capReached) = allPages(anyTransactionId, environment: environment, maxPages: maxPages)
            if capReached {
                capExceeded = "the transaction history of \(anyTransactionId) runs past \(maxPages) pages (\(maxPages * Self.historyPageSize) transactions)"
            }
            return answer
        }
        if let capExceeded { return (.pageCapExceeded(capExceeded), true) }
        switch routed {
        case let .found(history, _): return (.found(history), answered)
        case let .notFound(message): return (.notFound(message), answered)
        case let .invalidId(message): return (.invalidId(message), answered)
        case let .failed(outcome): return (.failed(outcome), answered)
        }
    }

    /// Every page in one environment. Reaching the cap is a failure (so no hop to sandbox follows)
    /// flagged by `capReached`.
    private func allPages(_ id: String, environment: AppleEnvironment, maxPages: Int) -> (Answer<TransactionHistory>, capReached: Bool) {
        var history = TransactionHistory(signedTransactions: [], environment: environment, pages: 0)
        var restarted = false
        while true {
            guard history.pages < maxPages else { return (.failed(.retry("page cap reached"), answered: true), true) }
            let page = get(Self.historyPath(id, revision: history.revision), environment: environment, decode: HistoryPage.init)
            history.pages += 1
            switch page {
            case let .found(page):
                history.signedTransactions += page.signedTransactions
                history.bundleId = page.bundleId
                history.appAppleId = page.appAppleId
                history.revision = page.revision
                guard page.hasMore else { return (.found(history), false) }
                guard page.revision != nil else {
                    return (.failed(.storeUnavailable("the \(environment.rawValue.lowercased()) App Store Server API said hasMore without a revision",
                                                      retryAfter: nil), answered: false), false)
                }
            case .paginationExpired where !restarted:
                restarted = true
                history.signedTransactions = []
                history.revision = nil
            case .notFound where history.revision != nil:
                // The first page found the customer; losing them mid-way is Apple's trouble, not an answer.
                return (.failed(.retry("the \(environment.rawValue.lowercased()) App Store Server API lost transaction \(id) while paging"),
                                answered: true), false)
            case .notFound: return (.notFound, false)
            case .unauthorized: return (.unauthorized, false)
            case .paginationExpired: return (.paginationExpired, false)
            case let .invalidId(message): return (.invalidId(message), false)
            case let .failed(outcome, answered): return (.failed(outcome, answered: answered), false)
            }
        }
    }

    package static func historyPath(_ id: String, revision: String?) -> String {
        var path = "/inApps/v2/history/\(id)?sort=ASCENDING"
        if let revision {
            // Opaque text from Apple: escaped so that it cannot change the query's meaning.
            let allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
                .union(CharacterSet(charactersIn: "-._~"))
            path += "&revision=" + (revision.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }
        return path
    }
}

/// One `HistoryResponse` page.
private struct HistoryPage {
    var revision: String?
    var hasMore: Bool
    var bundleId: String?
    var appAppleId: String?
    var signedTransactions: [String]

    init?(_ json: JSONValue) {
        guard let hasMore = json["hasMore"]?.looseBool, let items = json["signedTransactions"]?.arrayValue else { return nil }
        var signed: [String] = []
        for item in items {
            guard case let .string(jws) = item else { return nil }
            signed.append(jws)
        }
        self.hasMore = hasMore
        signedTransactions = signed
        revision = json["revision"]?.looseString
        bundleId = json["bundleId"]?.looseString
        appAppleId = json["appAppleId"]?.looseString
    }
}
