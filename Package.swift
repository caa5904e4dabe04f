// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "settle",
    products: [
        .executable(name: "settle", targets: ["settle"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        // The App Store Server Notifications endpoint: a well-kept HTTP server, not a hand-written parser.
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        // glibc's malloc.h (mallopt): part of libc, nothing to install or link.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        // Foundation: JSON, crypto, the HTTP client (libcurl) and server (libmicrohttpd), logging,
        // time, digests, the process's malloc arenas. Depends on no other settle target.
        .target(name: "SettleBase", dependencies: ["CCurl", "COpenSSL", "CMicroHTTPD", "CMalloc"]),
        // The domain model: orders, their states and reasons, purchases, verification outcomes,
        // resolutions, the eligibility rules; Apple's environment, signed transactions and
        // notifications as values. What the ledger stores and the stores produce. No C library, no I/O.
        .target(name: "SettleModel", dependencies: ["SettleBase"]),
        // The configuration file and its secrets. No C library: a PostgreSQL URL is kept as a
        // secret here and shown only through SettleLedger, where libpq reads it.
        .target(name: "SettleConfig", dependencies: ["SettleBase", "SettleModel"]),
        // Store clients: the App Store (receipts, decoding and verifying signed transactions and
        // notifications, the Server API), Google Play and Huawei AppGallery (HarmonyOS IAP Kit).
        .target(name: "SettleAppStore", dependencies: ["SettleBase", "SettleModel", "SettleConfig"],
                path: "Sources/Stores/AppStore/Client"),
        .target(name: "SettleGooglePlay", dependencies: ["SettleBase", "SettleModel", "SettleConfig"],
                path: "Sources/Stores/GooglePlay/Client"),
        .target(name: "SettleHuawei", dependencies: ["SettleBase", "SettleModel", "SettleConfig"], path: "Sources/Stores/Huawei/Client"),
        .target(name: "SettleOneStore", dependencies: ["SettleBase", "SettleModel", "SettleConfig"], path: "Sources/Stores/OneStore/Client"),
        // The ledger on SQLite and PostgreSQL: every state transition of an order, in one place. It
        // knows the stores only through the model's values, never their clients; the one target
        // that links SQLite and libpq (which also shows a PostgreSQL URL without its password).
        .target(name: "SettleLedger", dependencies: ["SettleBase", "SettleModel", "SettleConfig", "CSQLite", "CPostgres"]),
        // The operator's delivery and revoke hooks: commands and webhooks.
        .target(name: "SettleDelivery", dependencies: ["SettleBase", "SettleModel", "SettleConfig"]),
        // The engine: the reconciler (claim, verify, deliver, finish), revokes, support actions and
        // metrics, and the store contract (StoreModule, StoreAdapter, SideWork, StoreTask). Names no store.
        .target(name: "SettleEngine", dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleLedger", "SettleDelivery"]),
        // The store modules: everything settle knows about one store above the core, in
        // Sources/Stores/<Store>/ (its client above, its module here: descriptor, adapter,
        // inboxes, side queues), registered by one line in SettleApp's StoreModules.
        .target(name: "SettleAppStoreModule",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleAppStore", "SettleLedger", "SettleDelivery",
                               "SettleEngine"],
                path: "Sources/Stores/AppStore/Module"),
        .target(name: "SettleGooglePlayModule",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleGooglePlay", "SettleLedger", "SettleDelivery",
                               "SettleEngine"],
                path: "Sources/Stores/GooglePlay/Module"),
        .target(name: "SettleHuaweiModule",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleHuawei", "SettleLedger", "SettleEngine"],
                path: "Sources/Stores/Huawei/Module"),
        .target(name: "SettleOneStoreModule",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleOneStore", "SettleLedger", "SettleEngine"],
                path: "Sources/Stores/OneStore/Module"),
        // The simulators' core (`settle simulator`, the demo, the tests): rate limits, holds, the
        // plans file's shared settings, and the contract a store's stand-in keeps (`StoreSimulator`,
        // `StoreScript`). Names no store.
        .target(name: "SettleSimulator", dependencies: ["SettleBase", "SettleConfig"]),
        // Each store's stand-in, over the core and its own client, never the other store's: the App
        // Store's signs what it serves with its own chain, so nothing here reaches a real store.
        .target(name: "SettleAppStoreSimulator",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleAppStore", "SettleSimulator"],
                path: "Sources/Stores/AppStore/Simulator"),
        .target(name: "SettleGooglePlaySimulator",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleGooglePlay", "SettleSimulator"],
                path: "Sources/Stores/GooglePlay/Simulator"),
        .target(name: "SettleHuaweiSimulator",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleHuawei", "SettleSimulator"],
                path: "Sources/Stores/Huawei/Simulator"),
        .target(name: "SettleOneStoreSimulator",
                dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleOneStore", "SettleSimulator"],
                path: "Sources/Stores/OneStore/Simulator"),
        // Each store's part of `settle demo` (`DemoChapter`): its stand-in, files, orders and acts.
        .target(name: "SettleAppStoreDemo",
                dependencies: ["SettleBase", "SettleModel", "SettleLedger", "SettleEngine", "SettleAppStoreModule",
                               "SettleAppStoreSimulator"],
                path: "Sources/Stores/AppStore/Demo"),
        .target(name: "SettleGooglePlayDemo",
                dependencies: ["SettleBase", "SettleModel", "SettleEngine", "SettleGooglePlay", "SettleGooglePlaySimulator"],
                path: "Sources/Stores/GooglePlay/Demo"),
        .target(name: "SettleHuaweiDemo",
                dependencies: ["SettleBase", "SettleModel", "SettleEngine", "SettleHuawei", "SettleHuaweiSimulator"],
                path: "Sources/Stores/Huawei/Demo"),
        .target(name: "SettleOneStoreDemo",
                dependencies: ["SettleBase", "SettleModel", "SettleEngine", "SettleOneStore", "SettleOneStoreSimulator"],
                path: "Sources/Stores/OneStore/Demo"),
        // The application: `settle run` (the daemon's lifecycle, signals, sd_notify, the lock), every
        // subcommand, status views and support lookups.
        .target(name: "SettleApp", dependencies: ["SettleBase", "SettleModel", "SettleConfig", "SettleAppStore",
                                                   "SettleGooglePlay", "SettleLedger", "SettleDelivery", "SettleEngine",
                                                   "SettleSimulator", "SettleAppStoreModule", "SettleGooglePlayModule",
                                                   "SettleAppStoreSimulator", "SettleGooglePlaySimulator",
                                                   "SettleAppStoreDemo", "SettleGooglePlayDemo",
                                                   "SettleHuaweiModule", "SettleHuaweiSimulator", "SettleHuaweiDemo",
                                                   "SettleOneStoreModule", "SettleOneStoreSimulator", "SettleOneStoreDemo"]),
        // The thin executable: `SettleCommand.run` and nothing else.
        .executableTarget(name: "settle", dependencies: ["SettleApp"]),
        // The project's benchmark: every row of issue 11, side by side with a hand-written Python
        // reconciler (scripts/bench.sh). It seeds large ledgers with plain SQL through SettleLedger's
        // SQLiteDatabase.
        .executableTarget(name: "settle-bench",
                          dependencies: ["SettleApp", "SettleBase", "SettleConfig", "SettleAppStore", "SettleLedger",
                                         "SettleEngine", "SettleSimulator", "SettleGooglePlay", "SettleAppStoreModule",
                                         "SettleAppStoreSimulator", "SettleGooglePlaySimulator", "SettleDelivery"],
                          path: "Benchmarks/settle-bench"),
        // Notifications/s the endpoint takes while passes run (scripts/notify-bench.sh).
        .executableTarget(name: "settle-notify-bench",
                          dependencies: ["SettleApp", "SettleBase", "SettleConfig", "SettleLedger", "SettleEngine",
                                         "SettleAppStoreSimulator", "SettleAppStoreModule"],
                          path: "Benchmarks/settle-notify-bench"),
        // Shared test fixtures: a throwaway folder with a configuration, hooks and an Apple simulator.
        .target(name: "SettleTesting",
                dependencies: ["SettleApp", "SettleBase", "SettleConfig", "SettleAppStore", "SettleLedger", "SettleEngine",
                               "SettleAppStoreSimulator", "SettleAppStoreModule", "SettleGooglePlayModule"],
                path: "Tests/SettleTesting"),
        // Registers the test stores as the test process loads (a C constructor), before any test.
        .target(name: "CSettleTestStores", dependencies: ["SettleTesting"], path: "Tests/CSettleTestStores"),
        // Unit and contract tests of every target (folders mirror the targets).
        .testTarget(name: "SettleCoreTests",
                    dependencies: ["SettleApp", "SettleBase", "SettleModel", "SettleConfig", "SettleAppStore",
                                   "SettleGooglePlay", "SettleLedger", "SettleDelivery", "SettleEngine", "SettleSimulator",
                                   "SettleTesting", "SettleAppStoreModule", "SettleGooglePlayModule",
                                   "SettleAppStoreSimulator", "SettleGooglePlaySimulator", "CSettleTestStores",
                                   "SettleHuawei", "SettleHuaweiModule", "SettleHuaweiSimulator", "SettleOneStore",
                                   "SettleOneStoreModule", "SettleOneStoreSimulator"],
                    exclude: ["Fixtures"]),
        // The built binary, end to end.
        .testTarget(name: "settleTests",
                    dependencies: ["SettleApp", "SettleBase", "SettleModel", "SettleGooglePlay", "SettleLedger",
                                   "SettleTesting", "settle", "SettleAppStoreModule", "SettleGooglePlayModule",
                                   "SettleAppStoreSimulator", "SettleGooglePlaySimulator", "CSettleTestStores",
                                   "SettleHuawei", "SettleHuaweiSimulator", "SettleOneStore", "SettleOneStoreSimulator"]),
    ]
)
