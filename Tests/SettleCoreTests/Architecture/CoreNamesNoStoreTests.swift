import Foundation
import XCTest

/// A store is a module (issue 33): everything settle knows about one store lives in
/// `Sources/Stores/<Store>/`, and the core names no store. This counts the code lines outside
/// that folder that do (comments excluded) and fails, listing them, when a target names stores
/// more often than its budget allows. What is left is the registration list alone
/// (`Sources/SettleApp/StoreModules.swift`, which imports each store and names it once).
final class CoreNamesNoStoreTests: XCTestCase {
    /// The pattern of issue 33's measure, with the App Store's module names (`AppStore…`) and the
    /// stores added since (Huawei, ONE store).
    static let storeName = try! NSRegularExpression(
        pattern: "googlePlay|appStore|AppStore|Google|Apple|Play[A-Z]|google_play|app_store|Huawei|huawei|OneStore|one_store")

    /// Code lines naming a store that each target outside Sources/Stores may still hold.
    static let budgets: [String: Int] = [
        "SettleBase": 0,
        "SettleDelivery": 0,
        "settle": 0,
        "SettleEngine": 0,
        "SettleModel": 0,
        "SettleConfig": 0,
        "SettleLedger": 0,
        "SettleSimulator": 0,
        "SettleApp": 16,
    ]

    /// The ledger's numbered migrations, which every user's ledger has run: frozen text, never
    /// edited, that spells the first two stores' names as they were when the core held them. A new
    /// store adds nothing there (its tables are its module's named migrations), so the scan skips it.
    static let historyFolder = "SettleLedger/History/"

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// Every code line outside Sources/Stores that names a store, by target, as "path:line: text".
    static func offenders() throws -> [String: [String]] {
        var found: [String: [String]] = [:]
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        for case let url as URL in files where url.pathExtension == "swift" {
            let relative = String(url.path.dropFirst(sources.path.count + 1))
            guard !relative.hasPrefix("Stores/"), !relative.hasPrefix(historyFolder) else { continue }
            let target = String(relative.split(separator: "/").first ?? "")
            for (index, line) in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let text = line.trimmingCharacters(in: .whitespaces)
                guard !text.hasPrefix("//") else { continue }
                let range = NSRange(text.startIndex..., in: text)
                if storeName.firstMatch(in: text, range: range) != nil {
                    found[target, default: []].append("Sources/\(relative):\(index + 1): \(text)")
                }
            }
        }
        return found
    }

    func testTheCore_namesNoStoreBeyondWhatIsLeftToMove() throws {
        let found = try Self.offenders()
        XCTAssertFalse(found.isEmpty || (found["SettleApp"] ?? []).isEmpty, "the scan read no source: \(Self.sources.path)")
        for (target, lines) in found.sorted(by: { $0.key < $1.key }) {
            let budget = Self.budgets[target] ?? 0
            XCTAssertLessThanOrEqual(lines.count, budget, """
                \(target) names a store on \(lines.count) code lines (budget \(budget)); move store code into \
                Sources/Stores/<Store>/ instead:
                \(lines.joined(separator: "\n"))
                """)
        }
    }

    /// Issue 33's measure: only the registration list names a store, on four lines a store at
    /// most (its module's, simulator's and demo's imports, and its line in the list): 16 for the
    /// four stores.
    func testOnlyTheRegistrationList_namesAStore_onAtMostFourLinesAStore() throws {
        let lines = try Self.offenders().values.joined()
        XCTAssertLessThanOrEqual(lines.count, 16, lines.joined(separator: "\n"))
        let elsewhere = lines.filter { !$0.hasPrefix("Sources/SettleApp/StoreModules.swift:") }
        XCTAssertEqual(elsewhere, [], "only the registration list names a store")
    }

    func testTheScan_findsAStoreNamedInCode_butNotInAComment() throws {
        let line = "let store = Store.googlePlay"
        XCTAssertNotNil(Self.storeName.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)))
        let found = try Self.offenders()
        XCTAssertTrue(found.values.joined().allSatisfy { !$0.split(separator: ":", maxSplits: 2).last!.hasPrefix(" //") })
    }

    /// The skipped folder holds the frozen migrations and nothing that runs for a store: no
    /// function but the one that removed the stores' CHECK lists (migration 18's own step).
    func testTheHistoryFolder_holdsOnlyTheNumberedMigrations() throws {
        let folder = Self.sources.appendingPathComponent(Self.historyFolder)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        XCTAssertEqual(files, ["LedgerSchema+History.swift", "PostgresLedgerSchema+History.swift"])
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let functions = text.split(separator: "\n").filter { $0.contains("func ") }.map { $0.trimmingCharacters(in: .whitespaces) }
            XCTAssertTrue(functions.allSatisfy { $0.hasPrefix("static func dropStoreLists(") }, "\(file): \(functions)")
        }
    }
}
