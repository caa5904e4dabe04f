import Foundation
import Synchronization
import SettleTesting
import XCTest
@testable import SettleApp
@testable import SettleModel
@testable import SettleLedger

/// `settle enqueue --store <store> --proof-file`: a store module's proof, read by the module,
/// kept as data, never printed; the core's own proof options do not mix with it.
final class EnqueueStoreProofTests: XCTestCase {
    private func run(_ world: TestWorld, _ arguments: [String]) -> (code: Int32, out: String, err: String) {
        let out = Mutex(""), err = Mutex("")
        let code = SettleCommand.run(CommandContext(arguments: ["enqueue", "--config", world.configPath] + arguments, environment: [:],
                                                    standardOutput: { text in out.withLock { $0 += text } },
                                                    standardError: { text in err.withLock { $0 += text } },
                                                    time: world.time, modules: TestStores.modules))
        return (code, out.withLock { $0 }, err.withLock { $0 })
    }

    func testAModulesProof_isReadFromItsFile_keptAsData_andNeverPrinted() throws {
        let world = try TestWorld()
        try world.writeConfig(hook: try world.hook("ok.sh", exit: 0))
        _ = try SQLiteLedger(path: world.ledgerPath, time: world.time)
        let file = try world.write("sale.txt", "  SALE-77\n")
        let base = ["--store", "bogus", "--order", "b-77", "--user", "u-1", "--product", world.coins]
        let enqueued = run(world, base + ["--proof-file", file])
        XCTAssertEqual(enqueued.code, 0, enqueued.err)
        XCTAssertEqual(enqueued.out, "enqueued b-77 (bogus, bogus_sale)\n")
        XCTAssertFalse((enqueued.out + enqueued.err).contains("SALE-77"), "the proof is never printed")
        let order = try XCTUnwrap(try SQLiteLedger(path: world.ledgerPath, time: world.time).orderRecord("b-77")?.order)
        XCTAssertEqual(order.store, .bogus)
        XCTAssertEqual(order.storeProof, BogusStoreAdapter.proof(sale: "SALE-77"))
        XCTAssertEqual(run(world, base + ["--proof-file", file]).code, 0, "the same order again is a no-op")

        let other = try world.write("other.txt", "SALE-78")
        XCTAssertEqual(run(world, base + ["--proof-file", other]).code, 65, "another proof for the same order is refused")
        let bad = try world.write("bad.txt", "not a sale id!")
        let refused = run(world, ["--store", "bogus", "--order", "b-78", "--user", "u-1", "--product", world.coins, "--proof-file", bad])
        XCTAssertEqual(refused.code, 65)
        XCTAssertTrue(refused.err.contains("is not a bogus sale id"), refused.err)
        XCTAssertFalse(refused.err.contains("not a sale id!"), "the refusal never quotes the proof: \(refused.err)")
        XCTAssertEqual(run(world, base + ["--proof-file", file, "--receipt-file", file]).code, 64, "an App Store proof does not mix in")
        XCTAssertEqual(run(world, ["--store", "bogus", "--order", "b-79", "--user", "u-1", "--product", world.coins]).code, 64,
                       "a module's order needs its proof file")
        XCTAssertEqual(run(world, ["--order", "a-1", "--user", "u-1", "--product", world.coins, "--transaction", "1",
                                   "--proof-file", file]).code, 64, "--proof-file is no App Store proof")
        XCTAssertEqual(run(world, ["--store", "nowhere", "--order", "x", "--user", "u", "--product", world.coins]).code, 64)
    }
}
