import SettleSimulator
import SettleAppStoreSimulator
import SettleGooglePlaySimulator

/// Every store's stand-in `settle simulator` runs, in the order it starts and prints them (the
/// first listens on `--listen`'s port).
package enum StoreSimulators {
    package static let all: [any StoreSimulator.Type] = [AppStoreSimulator.self, GooglePlaySimulator.self]
}
