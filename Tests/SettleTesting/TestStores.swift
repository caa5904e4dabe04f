import SettleApp
import SettleEngine

/// The stores every test configures: the application's modules.
public enum TestStores {
    package static let modules: [any StoreModule.Type] = StoreModules.all
}
