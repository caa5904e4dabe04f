import SettleEngine
import SettleSimulator
import SettleAppStoreModule
import SettleAppStoreSimulator
import SettleGooglePlayModule
import SettleGooglePlaySimulator

/// Every store this build of settle sells through, one line a store: its module and its
/// stand-in for `settle simulator`, in the order status, the console and the simulator list
/// them. The one list a new store is added to (docs/architecture.md, "Adding a store").
package enum StoreModules {
    static let stores: [(module: any StoreModule.Type, simulator: any StoreSimulator.Type)] = [
        (AppStoreModule.self, AppStoreSimulator.self),
        (GooglePlayModule.self, GooglePlaySimulator.self),
    ]

    package static let all: [any StoreModule.Type] = stores.map { $0.module }
}

/// Every store's stand-in `settle simulator` runs, in the order it starts and prints them (the
/// first listens on `--listen`'s port).
package enum StoreSimulators {
    package static let all: [any StoreSimulator.Type] = StoreModules.stores.map { $0.simulator }
}
