import SettleModel

/// Who the store says bought an order's purchase, apart from who holds its grant now. A support
/// transfer moves the holder (`orders.user_id` becomes the new user) but never the buyer: the
/// store still names the buyer's account on every later purchase (a renewal, a purchase made in
/// the store), so a purchase the backend never saw is bound to the buyer the store names, never
/// to whoever support moved an earlier grant to.
///
/// SQL over an `orders` row named `o`, the same on both engines.
package enum OrderBuyer {
    /// The order's buyer: the user the first transfer took the purchase from, else its user.
    package static let column = """
        coalesce((SELECT s.from_user FROM support_actions s WHERE s.order_id = o.order_id AND s.kind = 'transfer' \
        AND s.from_user IS NOT NULL ORDER BY s.number LIMIT 1), o.user_id)
        """

    /// Whether the order's binding to its user was verified: settle granted it (a verified
    /// purchase whose account token or id matched the user), so it may vouch for who the token
    /// stands for. An order that failed its binding, or was never verified, vouches for nobody.
    package static let verified = "EXISTS (SELECT 1 FROM grants g WHERE g.order_id = o.order_id AND g.source = 'settle')"
}
