
/// Why an order went to `needs_attention`, as `status` shows it. Each one is something settle
/// cannot decide by itself; the README says what an operator does with each.
package enum AttentionReason: String, Sendable, Equatable, CaseIterable {
    case attemptsExhausted = "attempts_exhausted"
    case hookRefused = "hook_refused"
    /// The attempts ran out, the last one answered 2xx by the webhook without confirming the grant
    /// (its body's `idempotency_key`, or a `Settle-Granted` header, naming the request's key), or
    /// exit 0 by a batch command without the order's answer line. Something that is not the
    /// receiver (a maintenance page, a proxy) may have answered: nobody said the goods were granted.
    case hookUnconfirmed = "hook_unconfirmed"
    case grantConflict = "grant_conflict"
    /// The order's receipt is not in the ledger, or its stored text does not hash to `receipt_sha256`.
    case proofMissing = "proof_missing"
    /// A backend wrote the row badly (a BLOB where text belongs, a broken reference): settle
    /// cannot even record history against it.
    case rowInvalid = "row_invalid"
    /// The order's only proof is a transaction id, and no `server_api` is configured to look it up.
    case serverAPIRequired = "server_api_required"
    /// A receipt format settle did not read on this path: what earlier versions said of an iOS 6
    /// transaction receipt without `receipt_api` (now looked up by the id it names). Kept so
    /// ledgers holding it still read.
    case receiptFormatUnsupported = "receipt_format_unsupported"
    /// The proof binds the purchase to nobody and `user_binding` asks a person to look.
    case proofUnbound = "proof_unbound"
    /// The purchase carries an appAccountToken, but the order's user's token is unknown (no
    /// `app_account_token` stored with the order, a user id that is not a UUID): settle cannot
    /// tell whether the buyer the token names is the order's user.
    case tokenUnverifiable = "token_unverifiable"
    /// Apple's answer could not be read in full (a customer history past the page cap).
    case historyIncomplete = "history_incomplete"
    /// Apple reported a purchase no backend enqueued, and nothing maps it to a user: support
    /// assigns it (`settle assign ORDER --user U`).
    case unclaimedPurchase = "unclaimed_purchase"
    /// The order's product is not in the configuration's `products`: a gap on settle's side,
    /// not Apple's word on the purchase.
    case unknownProduct = "unknown_product"
    /// The hook answered "already granted" for a purchase settle may itself have handed to the
    /// hook for this order before (a re-delivery, an earlier attempt): delivered by settle, or
    /// granted elsewhere? The order keeps the purchase; a person checks the backend.
    case alreadyGrantedUnclear = "already_granted_unclear"
    /// The history catch-up found a purchase made before settle first read Apple's history
    /// (`notifications.backfill_since`): the app's own flow most likely granted it already, so a
    /// person decides (`settle retry` to deliver it, `settle resolve --as granted_by_hand` if it was).
    case backfilledPurchase = "backfilled_purchase"
    /// Google Play answered with a purchase state settle has no rule for (an expired, paused or
    /// on-hold subscription, a state Google added): a person decides.
    case purchaseStateUnclear = "purchase_state_unclear"
    /// The goods were granted, and the store keeps refusing to hear it (Google's 4xx on
    /// acknowledge or consume, attempt after attempt): Google refunds a purchase left
    /// unacknowledged for three days, so a person looks before that (status shows the clock).
    /// Also an App Store call about a delivered purchase that Apple refuses for good (Finish
    /// Transaction's or Send Consumption Information's final 4xx, such as 4000185 for a family
    /// member's transaction): recorded, never sent again.
    case storeFinishRefused = "store_finish_refused"
    /// Google Play says the purchase was consumed or acknowledged, and settle never delivered
    /// it: someone else finished it (the app, another backend), most likely after granting it.
    /// A person decides (`settle resolve --as granted_by_hand` if the customer has it, `settle
    /// retry` to deliver it; settle then leaves Google as it is).
    case finishedElsewhere = "finished_elsewhere"
    /// The store refused for good to answer a lookup of this purchase, before anything was
    /// delivered (Apple's 4000185 from Get Transaction Info for a family member's shared
    /// transaction): a retry is refused the same way, and nothing says the goods were granted.
    case storeRefused = "store_refused"
    /// The store confirmed the purchase, and its buyer had `refunds.hold_after` or more refunds in
    /// the last 90 days (`RefundHistory`): the grant waits for a person, the hook was not called.
    /// A person's `settle retry` grants it (never held again), `settle resolve` closes it.
    case repeatRefunder = "repeat_refunder"
}
