import SettleModel
import SettleConfig

/// Each confirmed purchase's price, for `settle report`: the store's when its answer states one,
/// else the configuration's `prices` for the product (one unit's price times the quantity), else
/// none: the order is counted without a price, never priced by a guess.
extension Reconciler {
    func priced(_ match: Match) -> Match {
        var priced = match
        for i in priced.candidates.indices where priced.candidates[i].price == nil {
            let (product, quantity) = (priced.candidates[i].productId, priced.candidates[i].quantity)
            priced.candidates[i].price = configuration.configuredPrice(of: product, quantity: quantity)
        }
        return priced
    }
}
