import SettleEngine
import SettleSimulator
import SettleAppStoreModule
import SettleAppStoreSimulator
import SettleAppStoreDemo
import SettleGooglePlayModule
import SettleGooglePlaySimulator
import SettleGooglePlayDemo
import SettleHuaweiModule
import SettleHuaweiSimulator
import SettleHuaweiDemo
import SettleOneStoreModule
import SettleOneStoreSimulator
import SettleOneStoreDemo

/// Every store this build of settle sells through, one line a store: its module, its stand-in
/// for `settle simulator` and its part of `settle demo`, in the order status, the console, the
/// simulator and the demo list them. The one list a new store is added to (docs/architecture.md,
/// "Adding a store").
package enum StoreModules {
    static let stores: [(module: any StoreModule.Type, simulator: any StoreSimulator.Type, demo: any DemoChapter.Type)] = [
        (AppStoreModule.self, AppStoreSimulator.self, AppStoreDemo.self),
        (GooglePlayModule.self, GooglePlaySimulator.self, GooglePlayDemo.self),
        (HuaweiModule.self, HuaweiSimulator.self, HuaweiDemo.self),
        (OneStoreModule.self, OneStoreSimulator.self, OneStoreDemo.self),
    ]

    package static let all: [any StoreModule.Type] = stores.map { $0.module }
}

/// Every store's part of `settle demo`, in the order the demo tells them.
package enum StoreDemoChapters {
    package static let all: [any DemoChapter.Type] = StoreModules.stores.map { $0.demo }
}

/// Every store's stand-in `settle simulator` runs, in the order it starts and prints them (the
/// first listens on `--listen`'s port).
package enum StoreSimulators {
    package static let all: [any StoreSimulator.Type] = StoreModules.stores.map { $0.simulator }
}
