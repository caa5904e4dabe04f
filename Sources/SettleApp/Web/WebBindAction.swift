import Foundation
import SettleBase
import SettleModel
import SettleLedger

/// The console's Bind form (issue 36): `settle bind` on the order page of a `token_unverifiable`
/// order, for the role `support` and above, with its CSRF token like every action.
///
/// Who reaches it: a signed-in support agent (or anyone holding their session). The abuse to fear
/// is binding a purchase to the wrong person — a customer persuading an agent to bind the token
/// the purchase names to their own account. The ledger refuses a token another user's order
/// carries and never binds `user_mismatch`; the pass grants only when the purchase's token is the
/// bound one; the audit log names the agent. The token is read from the POST body only, never
/// echoed: refusals and history name its fingerprint.
extension WebActions {
    /// The form's fields for an order `settle bind` may act on; nil for any other.
    static func bindForm(_ order: Order) -> Markup? {
        guard AccountTokenBinding.isBindable(order) else { return nil }
        let label = order.store.descriptor.accountIdLabel
        return """
            <input type="text" name="token" placeholder="the user's \(label) (from your backend)" \
            aria-label="\(label)" autocomplete="off" required>\
            <input type="text" name="note" placeholder="note (required)" aria-label="bind note">\
            <label><input type="checkbox" name="replace" value="yes"> \
            replace a different token the order carries</label>
            """
    }

    /// Binds the form's token; nil when done, else the page that says why not.
    static func bind(orderId: String, note: String?, _ request: WebRequest,
                     console: WebConsole) throws -> HTTPServerResponse? {
        guard let token = request.form["token"]?.trimmingCharacters(in: .whitespaces), !token.isEmpty else {
            return try refuse("the user's account token is required", orderId: orderId, request, console: console)
        }
        guard let note else {
            return try refuse("a note is required: say why (a ticket number)", orderId: orderId, request,
                              console: console)
        }
        try console.ledger.bind(orderId: orderId, accountToken: token, note: note,
                                replace: request.form["replace"] == "yes",
                                binding: console.configuration.userBinding, by: request.person)
        return nil
    }
}
