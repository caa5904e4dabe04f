import SettleApp
import SettleEngine

/// The stores every test configures: the application's modules and the bogus store.
public enum TestStores {
    package static let modules: [any StoreModule.Type] = StoreModules.all + [BogusStoreModule.self]
}

/// Called as the test process loads (Tests/CSettleTestStores): registers every test store's
/// descriptor before the first test, so no test's output depends on which ran before it.
@_cdecl("settle_register_test_stores")
public func registerTestStores() {
    TestStores.modules.register()
}
