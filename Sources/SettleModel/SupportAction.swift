/// Something support asked settle to tell the operator's hook about a granted order, recorded
/// in the ledger (`support_actions`) by the command or the web console and carried out by the
/// next pass, step by step, each step under an idempotency key of its own so a crash between
/// steps resumes at the step not recorded and a re-sent step is recognisable:
///
/// - a **transfer** moves a granted purchase to another user: the revoke route takes it back
///   from the holder (`transfer:ORDER:N:revoke`), then the grant route gives it to the new user
///   (`transfer:ORDER:N:grant`), then the order's user becomes the new one;
/// - a **redelivery** re-sends what settle last finished for the order (its grant, a transfer's
///   step, or a refund's revoke) under its original key, for a backend that lost it.
package struct SupportAction: Sendable, Equatable {
    package enum Kind: String, Sendable { case transfer, redeliver }

    /// `pending`: due at `nextAttemptAt`; `waiting`: a step failed for good (the hook refused,
    /// or the attempts ran out) and waits for a person, its reason in `lastError`; `done`;
    /// `cancelled`: the purchase was refunded before the action could end.
    package enum State: String, Sendable { case pending, waiting, done, cancelled }

    /// The step to run next: a transfer's `revoke` then `grant`; a redelivery's `resend`.
    package enum Step: String, Sendable { case revoke, grant, resend, done }

    /// What a redelivery re-sends.
    package enum Target: String, Sendable {
        /// The order's own grant, under its grant key.
        case grant
        /// The revoke of a refund (Apple's REFUND or REVOKE, Google's voiding), under `revoke:TXN`.
        case revoke
        /// A transfer's grant to the new holder (`transfer:ORDER:N:grant`).
        case transferGrant = "transfer_grant"
        /// A transfer's revoke from the previous holder (`transfer:ORDER:N:revoke`).
        case transferRevoke = "transfer_revoke"

        /// Whether it goes to the revoke route (else the grant route).
        package var isRevoke: Bool { self == .revoke || self == .transferRevoke }
    }

    package var orderId: String
    package var kind: Kind
    /// The order's Nth action of this kind: 1, 2, …
    package var number: Int
    package var state: State
    package var step: Step
    /// A transfer's previous and new holder (for a redelivery of a transfer's step, that transfer's).
    package var fromUser: String?
    package var toUser: String?
    package var note: String
    /// Who asked: "alice via web".
    package var requestedBy: String
    /// A redelivery's target, its key, and the transfer it belongs to (for a transfer's step).
    package var target: Target?
    package var targetKey: String?
    package var targetNumber: Int?
    package var requestedAt: Int64
    package var revokedAt: Int64?
    package var grantedAt: Int64?
    package var doneAt: Int64?
    package var attempts: Int
    package var nextAttemptAt: Int64
    package var lastError: String?
    /// The claim this action was handed out under (as `RevocationJob.claim`).
    package var claim: Int64

    package init(orderId: String, kind: Kind, number: Int, state: State, step: Step, fromUser: String? = nil, toUser: String? = nil,
                note: String, requestedBy: String, target: Target? = nil, targetKey: String? = nil, targetNumber: Int? = nil,
                requestedAt: Int64, revokedAt: Int64? = nil, grantedAt: Int64? = nil, doneAt: Int64? = nil, attempts: Int = 0,
                nextAttemptAt: Int64, lastError: String? = nil, claim: Int64 = 0) {
        (self.orderId, self.kind, self.number, self.state) = (orderId, kind, number, state)
        (self.step, self.fromUser, self.toUser, self.note) = (step, fromUser, toUser, note)
        (self.requestedBy, self.target, self.targetKey, self.targetNumber) = (requestedBy, target, targetKey, targetNumber)
        (self.requestedAt, self.revokedAt, self.grantedAt, self.doneAt) = (requestedAt, revokedAt, grantedAt, doneAt)
        (self.attempts, self.nextAttemptAt, self.lastError, self.claim) = (attempts, nextAttemptAt, lastError, claim)
    }

    /// Whether it is still to be carried out (pending, or waiting for a person).
    package var isOpen: Bool { state == .pending || state == .waiting }

    /// "transfer 1", "redeliver 2".
    package var name: String { "\(kind.rawValue) \(number)" }

    /// The key of a transfer's step: `transfer:ORDER:N:revoke` or `transfer:ORDER:N:grant`.
    package static func transferKey(orderId: String, number: Int, step: Step) -> String {
        "transfer:\(orderId):\(number):\(step.rawValue)"
    }

    /// The key of the step this action runs now: a transfer's, or the redelivery's original key.
    package var currentKey: String? {
        switch (kind, step) {
        case (.transfer, .revoke), (.transfer, .grant): Self.transferKey(orderId: orderId, number: number, step: step)
        case (.redeliver, _): targetKey
        default: nil
        }
    }

    /// The key of a refund's revoke: `revoke:TXN`, or `revoke:TXN:ROUND` for a refund after a
    /// reversed one (`RevokeHook.idempotencyKey`).
    package static func revokeKey(transactionId: String, round: Int = 1) -> String {
        round <= 1 ? "revoke:\(transactionId)" : "revoke:\(transactionId):\(round)"
    }
}

/// What `requestTransfer` recorded.
package struct TransferRequest: Sendable, Equatable {
    package var orderId: String
    /// The order's transfer number (the N in its keys).
    package var number: Int
    package var fromUser: String
    package var toUser: String
    /// A transfer to the same user that was waiting for a person, due again now.
    package var resumed: Bool

    package init(orderId: String, number: Int, fromUser: String, toUser: String, resumed: Bool) {
        (self.orderId, self.number, self.fromUser, self.toUser) = (orderId, number, fromUser, toUser)
        self.resumed = resumed
    }

    package var revokeKey: String { SupportAction.transferKey(orderId: orderId, number: number, step: .revoke) }
    package var grantKey: String { SupportAction.transferKey(orderId: orderId, number: number, step: .grant) }
}

/// What `requestRedelivery` recorded: what the next pass re-sends, under which key.
package struct RedeliveryRequest: Sendable, Equatable {
    package var orderId: String
    package var number: Int
    package var target: SupportAction.Target
    package var idempotencyKey: String
    /// The user the re-sent document names.
    package var userId: String
    /// A redelivery that was waiting for a person, due again now.
    package var resumed: Bool

    package init(orderId: String, number: Int, target: SupportAction.Target, idempotencyKey: String, userId: String, resumed: Bool) {
        (self.orderId, self.number, self.target, self.idempotencyKey) = (orderId, number, target, idempotencyKey)
        (self.userId, self.resumed) = (userId, resumed)
    }

    /// "its grant", "the revoke of its refund", "transfer 1's grant to u-2".
    package var what: String {
        switch target {
        case .grant: "its grant"
        case .revoke: "the revoke of its refund"
        case .transferGrant: "its transfer's grant to \(userId)"
        case .transferRevoke: "its transfer's revoke from \(userId)"
        }
    }
}
