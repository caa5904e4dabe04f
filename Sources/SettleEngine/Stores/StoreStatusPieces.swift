import SettleBase
import SettleLedger

/// What a store adds to the ledger's status (`settle status`, `--json`, the console's
/// overview): its JSON member always, a line and a console alert when there is something to say.
package struct StoreStatusNote: Sendable {
    package var jsonKey: String
    package var json: JSONValue
    /// A line of `settle status`; nil when all is well.
    package var text: String?
    /// A paragraph the console's overview shows as bad news; nil when all is well.
    package var alert: String?

    package init(jsonKey: String, json: JSONValue, text: String? = nil, alert: String? = nil) {
        (self.jsonKey, self.json, self.text, self.alert) = (jsonKey, json, text, alert)
    }
}

/// What a store adds to one order's status (`settle status ORDER`, `--json`, the order's page):
/// a section of facts of its own, such as where telling the store stands.
package struct StoreOrderSection: Sendable {
    package var jsonKey: String
    package var json: JSONValue
    /// Its heading on the order's page, and the page's id for it.
    package var title: String
    package var id: String
    /// Its line in `settle status ORDER`.
    package var text: String
    package var facts: [(String, String)]
    /// What it adds to the customer view's subscription line (a hold, a grace period); nil: nothing.
    package var subscriptionNote: String? = nil

    package init(jsonKey: String, json: JSONValue, title: String, id: String, text: String, facts: [(String, String)]) {
        (self.jsonKey, self.json, self.title, self.id, self.text, self.facts) = (jsonKey, json, title, id, text, facts)
    }
}

/// Defaults: a store that says nothing adds nothing.
extension StoreModule {
    package static func statusNotes(_ ledger: any SettleLedger) throws(LedgerError) -> [StoreStatusNote] { [] }

    package static func orderSections(_ ledger: any SettleLedger, orderId: String) throws(LedgerError) -> [StoreOrderSection] { [] }
}

extension Array where Element == any StoreModule.Type {
    /// Every module's notes, in the modules' order.
    package func statusNotes(_ ledger: any SettleLedger) throws(LedgerError) -> [StoreStatusNote] {
        var notes: [StoreStatusNote] = []
        for module in self { notes += try module.statusNotes(ledger) }
        return notes
    }

    /// Every module's sections of one order, in the modules' order.
    package func orderSections(_ ledger: any SettleLedger, orderId: String) throws(LedgerError) -> [StoreOrderSection] {
        var sections: [StoreOrderSection] = []
        for module in self { sections += try module.orderSections(ledger, orderId: orderId) }
        return sections
    }
}
