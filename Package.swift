// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "settle",
    products: [
        .executable(name: "settle", targets: ["settle"]),
        .library(name: "SettleCore", targets: ["SettleCore"]),
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
        .target(name: "SettleCore", dependencies: ["CSQLite", "CCurl", "COpenSSL", "CPostgres", "CMicroHTTPD"]),
        .executableTarget(name: "settle", dependencies: ["SettleCore"]),
        // The project's benchmark: every row of issue 11, side by side with a hand-written Python
        // reconciler (scripts/bench.sh). CSQLite only to seed large ledgers with plain SQL.
        .executableTarget(name: "settle-bench", dependencies: ["SettleCore", "CSQLite"], path: "Benchmarks/settle-bench"),
        // Notifications/s the endpoint takes while passes run (scripts/notify-bench.sh).
        .executableTarget(name: "settle-notify-bench", dependencies: ["SettleCore"], path: "Benchmarks/settle-notify-bench"),
        // Shared test fixtures: a throwaway folder with a configuration, hooks and an Apple simulator.
        .target(name: "SettleTesting", dependencies: ["SettleCore"], path: "Tests/SettleTesting"),
        .testTarget(name: "SettleCoreTests", dependencies: ["SettleCore", "SettleTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "settleTests", dependencies: ["SettleCore", "SettleTesting", "settle"]),
    ]
)
