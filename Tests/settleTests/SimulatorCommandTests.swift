import Foundation
import SettleApp
import SettleTesting
import XCTest
import SettleBase

/// The standalone simulator: an integrator scripts Apple's answers and runs settle against it.
final class SimulatorCommandTests: EndToEndTestCase {
    func testStandaloneSimulator_servesTheScript_andSettleGrantsAgainstIt() throws {
        try world.writeConfig(serverAPI: true)
        let receipt = Data("integration receipt".utf8).base64EncodedString()
        let plans = try world.write("plans.json", """
            {"receipts": [{"receipt_data": "\(receipt)", "in_app": [{"product_id": "\(world.coins)", "transaction_id": "4000000000000001"}],
                           "answers": [{"status": 21005}]}],
             "transactions": [{"transaction_id": "4000000000000002", "product_id": "\(world.coins)",
                               "app_account_token": "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"}],
             "apple_orders": {"MQ5Q8W3X2Z": ["4000000000000002"]}}
            """)
        let root = world.folder + "/standalone-root.pem"
        let simulator = try SettleBinary.start(["simulator", "--listen", "127.0.0.1:0", "--script", plans, "--write-root", root,
                                                "--config", world.configPath], outputFolder: world.folder)
        defer { if simulator.isRunning { simulator.send(SIGKILL); _ = simulator.wait() } }
        var base = ""
        XCTAssertTrue(eventually(within: 20) {
            let out = (try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? ""
            guard let line = out.split(separator: "\n").first, line.hasPrefix("settle simulator listening on ") else { return false }
            base = String(line.dropFirst("settle simulator listening on ".count))
            return true
        })
        // A configuration of the integrator's, pointed at the simulator and trusting its root.
        try world.writeConfig(serverAPI: true, overrides: [
            ("receipt_api", .object([("production_url", .string(base + "/production/verifyReceipt")),
                                     ("sandbox_url", .string(base + "/sandbox/verifyReceipt")),
                                     ("shared_secret_file", .string("shared-secret"))])),
            ("server_api", TestWorld.merge(world.serverAPIConfig.objectMembers ?? [], [
                ("production_url", .string(base + "/production")), ("sandbox_url", .string(base + "/sandbox")),
                ("root_certificates", .array([.string(root)]))]).asObject),
        ])
        try enqueue("o-1", receipt: receipt)
        try settle(expecting: 0, ["enqueue", "--order", "o-2", "--user", "u-1", "--product", world.coins,
                                  "--transaction", "4000000000000002", "--app-account-token", "6f1e4c2a-5b3d-4e8f-9a0b-1c2d3e4f5a6b"])
        XCTAssertEqual(try settle(["reconcile"]).status, 0)
        XCTAssertEqual(try state("o-1"), "pending", "the scripted 21005 came first")
        XCTAssertEqual(try state("o-2"), "finished")
        try settle(expecting: 0, ["reconcile", "--order", "o-1"])
        XCTAssertEqual(try state("o-1"), "finished")
        let lookup = try settle(expecting: 0, ["status", "--transaction", "MQ5Q8W3X2Z"])
        XCTAssertTrue(lookup.stdout.contains("o-2"), lookup.stdout)
        simulator.send(SIGTERM)
        let ended = simulator.wait()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertTrue(ended.stdout.contains("settle simulator stopped after"), ended.stdout)
    }

    /// A SIGTERM sent the moment the simulator says it listens stops it cleanly: the signal is
    /// caught before that line is printed (it was ignored for a moment, and a test waited 40 min).
    func testSimulator_stoppedTheMomentItSaysItListens_stopsEveryTime() throws {
        try world.writeConfig(serverAPI: true)
        for round in 0..<8 {
            let simulator = try SettleBinary.start(["simulator", "--listen", "127.0.0.1:0", "--config", world.configPath],
                                                   outputFolder: world.folder)
            defer { if simulator.isRunning { simulator.send(SIGKILL); _ = simulator.wait() } }
            XCTAssertTrue(eventually(within: 20) {
                ((try? String(contentsOfFile: simulator.stdoutPath, encoding: .utf8)) ?? "").hasPrefix("settle simulator listening on ")
            })
            simulator.send(SIGTERM)
            XCTAssertTrue(eventually(within: 10) { !simulator.isRunning }, "round \(round): SIGTERM was lost")
            XCTAssertEqual(simulator.wait().status, 0, "round \(round)")
        }
    }

    func testSimulator_refusesToListenBeyondLoopback_andABrokenScript() throws {
        let wide = try settle(["simulator", "--listen", "0.0.0.0:8080"])
        XCTAssertEqual(wide.status, 64)
        XCTAssertTrue(wide.stderr.contains("loopback only"), wide.stderr)
        let plans = try world.write("bad.json", #"{"transactions": [{"product_id": "x"}]}"#)
        let broken = try settle(["simulator", "--script", plans])
        XCTAssertEqual(broken.status, 65)
        XCTAssertTrue(broken.stderr.contains("transactions[0]"), broken.stderr)
    }
}

private extension Array where Element == (String, JSONValue) {
    var asObject: JSONValue { .object(self) }
}
