import SettleBase
import SettleConfig
import SettleLedger

/// A store's support lookup of an order id from the customer's receipt e-mail, for `settle
/// status --transaction` and the console's search: the store says whose purchases are behind it,
/// and the app renders its answer without knowing the store.
package protocol StoreOrderLookup: Sendable {
    func lookUp(_ orderId: String) -> StoreOrderAnswer
}

/// One store's answer, as values the app renders.
package struct StoreOrderAnswer: Sendable {
    /// Its member of `settle status --json` ("<key>": {...}).
    package var jsonKey: String
    /// The console's section: its title ("<title> ORDER_ID") and HTML id.
    package var title: String
    package var sectionId: String
    /// Narrows the ledger's orders shown to those holding the purchases found (unchanged when none).
    package var narrow: @Sendable (inout OrderFilter) -> Void
    /// Its text and JSON, given how many of the ledger's orders hold it.
    package var text: @Sendable (_ held: Int) -> String
    package var json: @Sendable (_ held: Int) -> JSONValue

    package init(jsonKey: String, title: String, sectionId: String, narrow: @escaping @Sendable (inout OrderFilter) -> Void,
                 text: @escaping @Sendable (_ held: Int) -> String, json: @escaping @Sendable (_ held: Int) -> JSONValue) {
        self.jsonKey = jsonKey
        self.title = title
        self.sectionId = sectionId
        self.narrow = narrow
        self.text = text
        self.json = json
    }
}

/// Defaults: a store without an order lookup recognises no order id.
extension StoreModule {
    package static func isOrderId(_ text: String) -> Bool { false }

    package static func orderLookup(_ configuration: Configuration, time: any TimeSource,
                                    pacer: Pacer) throws(ConfigError) -> (any StoreOrderLookup)? { nil }
}
