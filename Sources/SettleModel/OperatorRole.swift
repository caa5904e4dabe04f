/// What a console user may do (issue 36). Each role includes the ones before it: a `viewer`
/// reads; `support` also retries, assigns, resolves, binds and asks stores; an `admin` also
/// transfers, redelivers and acts on many orders at once. The shell has no role: whoever may
/// run `settle` on the host may do everything, as the ledger's file or URL already allows.
package enum OperatorRole: String, Sendable, CaseIterable, Comparable {
    case viewer, support, admin

    private var rank: Int {
        switch self {
        case .viewer: return 0
        case .support: return 1
        case .admin: return 2
        }
    }

    package static func < (a: OperatorRole, b: OperatorRole) -> Bool { a.rank < b.rank }

    /// Whether this role may do what `needed` may.
    package func allows(_ needed: OperatorRole) -> Bool { self >= needed }
}
