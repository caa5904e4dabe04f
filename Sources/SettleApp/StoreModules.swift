import SettleEngine
import SettleAppStoreModule
import SettleGooglePlayModule

/// Every store this build of settle sells through, in the order status and the console list
/// them: the one list a new store's module is added to (docs/architecture.md, "Adding a store").
package enum StoreModules {
    package static let all: [any StoreModule.Type] = [AppStoreModule.self, GooglePlayModule.self]
}
