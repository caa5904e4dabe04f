import Foundation
import SettleBase
import XCTest

/// Issue 36: `settle retry --reason R` after an incident: it counts and names what it would
/// retry, warns when the reason will recur, asks on a terminal (elsewhere needs --yes), records
/// the operator on each order, and leaves every other order alone.
final class BulkRetryTests: EndToEndTestCase {
    /// o-1..o-3 refused by the hook (hook_refused), o-4 rejected (forged), all from one pass.
    private func incident() throws {
        try world.hook("grant.sh", exit: 0, extra: "exit 65")
        for n in 1...3 { try enqueueValid("o-\(n)", transaction: "200000000000000\(n)") }
        try enqueueForged("o-4")
        try settle(expecting: 0, ["reconcile"])
        for n in 1...3 { XCTAssertEqual(try state("o-\(n)"), "needs_attention") }
        try world.hook("grant.sh", exit: 0)
    }

    func testDryRun_countsAndNamesTheOrders_andChangesNothing() throws {
        try incident()
        let result = try settle(expecting: 0, ["retry", "--reason", "hook_refused", "--dry-run"])
        XCTAssertTrue(result.stdout.hasPrefix("3 orders needs_attention as hook_refused\n"), result.stdout)
        for n in 1...3 { XCTAssertTrue(result.stdout.contains("o-\(n)"), result.stdout) }
        XCTAssertTrue(result.stdout.contains("dry run: would put 3 orders back to pending, due now; nothing changed"), result.stdout)
        for n in 1...3 { XCTAssertEqual(try state("o-\(n)"), "needs_attention") }
        // A reason a retry reproduces is named as such.
        let rejected = try settle(expecting: 0, ["retry", "--reason", "receipt_invalid", "--state", "rejected", "--dry-run"])
        XCTAssertTrue(rejected.stdout.hasPrefix("1 order rejected as receipt_invalid\n"), rejected.stdout)
        XCTAssertTrue(rejected.stderr.contains("warning: orders set aside as receipt_invalid"), rejected.stderr)
        XCTAssertTrue(rejected.stderr.contains("will most likely end the same way"), rejected.stderr)
    }

    func testWithYes_retriesEveryOrderOfTheReason_recordsTheOperator_andLeavesTheOthers() throws {
        try incident()
        let refused = try settle(["retry", "--reason", "hook_refused", "--note", "INC-7"])
        XCTAssertEqual(refused.status, 64, "not on a terminal and no --yes: \(refused.stderr)")
        XCTAssertTrue(refused.stderr.contains("not on a terminal: add --yes to retry 3 orders"), refused.stderr)
        XCTAssertEqual(try state("o-1"), "needs_attention")

        let result = try settle(["retry", "--reason", "hook_refused", "--yes", "--note", "INC-7"],
                                environment: ["SUDO_USER": "alice"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasSuffix("retried 3 orders: pending, due now\n"), result.stdout)
        for n in 1...3 {
            XCTAssertEqual(try state("o-\(n)"), "pending")
            XCTAssertEqual(try history("o-\(n)").last?["detail"], .string("by alice via cli: INC-7"))
        }
        XCTAssertEqual(try state("o-4"), "rejected", "another reason's order is left alone")
        // Each order retried is in the audit log, naming the person at the shell.
        let audit = try settle(expecting: 0, ["audit", "--json"]).stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        let retries = audit.filter { $0["action"]?.looseString == "retry" }
        XCTAssertEqual(Set(retries.compactMap { $0["subject"]?.looseString }), ["o-1", "o-2", "o-3"])
        XCTAssertTrue(retries.allSatisfy { $0["actor"]?.looseString == "alice" && $0["channel"]?.looseString == "cli" }, "\(retries)")
        try settle(expecting: 0, ["reconcile"])
        for n in 1...3 { XCTAssertEqual(try state("o-\(n)"), "finished") }
    }

    func testSinceAndState_narrowIt_andUnclaimedOrBadInput_areRefusedNamingWhy() throws {
        try incident()
        let future = Timestamp.rfc3339(unixSeconds: Int64(Date().timeIntervalSince1970) + 3600)
        let none = try settle(expecting: 0, ["retry", "--reason", "hook_refused", "--since", future, "--yes", "--note", "x"])
        XCTAssertTrue(none.stdout.contains("no order is needs_attention as hook_refused, changed since \(future); nothing to retry"),
                      none.stdout)
        let recent = try settle(expecting: 0, ["retry", "--reason", "hook_refused", "--since", "1h", "--dry-run"])
        XCTAssertTrue(recent.stdout.hasPrefix("3 orders"), recent.stdout)
        let unclaimed = try settle(["retry", "--reason", "unclaimed_purchase", "--yes", "--note", "x"])
        XCTAssertEqual(unclaimed.status, 65, unclaimed.stderr)
        XCTAssertTrue(unclaimed.stderr.contains("settle assign"), unclaimed.stderr)
        XCTAssertEqual(try settle(["retry", "--reason", "hook_refused", "--state", "finished", "--yes", "--note", "x"]).status, 64)
        XCTAssertEqual(try settle(["retry", "--reason", "hook_refused", "--since", "yesterday", "--yes", "--note", "x"]).status, 64)
        // An absurd age is refused, not an overflow.
        let absurd = try settle(["retry", "--reason", "hook_refused", "--since", "9223372036854775807d", "--yes", "--note", "x"])
        XCTAssertEqual(absurd.status, 64, absurd.stderr)
        XCTAssertTrue(absurd.stderr.contains("--since: \"9223372036854775807d\" is not"), absurd.stderr)
        XCTAssertEqual(try settle(["retry", "--reason", "hook_refused", "--yes"]).status, 64, "a note is required")
        XCTAssertEqual(try settle(["retry", "o-1", "--reason", "hook_refused", "--yes", "--note", "x"]).status, 64)
        XCTAssertEqual(try settle(["retry", "--yes", "o-1"]).status, 64, "--yes belongs to --reason")
        for n in 1...3 { XCTAssertEqual(try state("o-\(n)"), "needs_attention") }
    }

    /// On a terminal it asks; anything but y changes nothing.
    func testOnATerminal_itAsks_andOnlyYesRetries() throws {
        try incident()
        let no = try onTerminal(["retry", "--reason", "hook_refused", "--note", "INC-8"], answer: "n")
        XCTAssertEqual(no.status, 0, no.output)
        XCTAssertTrue(no.output.contains("retry 3 orders? [y/N]"), no.output)
        XCTAssertTrue(no.output.contains("nothing changed"), no.output)
        XCTAssertEqual(try state("o-1"), "needs_attention")
        let yes = try onTerminal(["retry", "--reason", "hook_refused", "--note", "INC-8"], answer: "y")
        XCTAssertEqual(yes.status, 0, yes.output)
        XCTAssertTrue(yes.output.contains("retried 3 orders: pending, due now"), yes.output)
        XCTAssertEqual(try state("o-1"), "pending")
    }

    /// Runs settle on a pseudo-terminal (python's pty), answering its prompt.
    private func onTerminal(_ arguments: [String], answer: String) throws -> (status: Int32, output: String) {
        let script = """
            import os, pty, select, sys
            argv, answer = sys.argv[1:-1], sys.argv[-1]
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(argv[0], argv)
            out, sent = b"", False
            while True:
                ready, _, _ = select.select([fd], [], [], 20)
                if not ready:
                    break
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    break
                if not data:
                    break
                out += data
                if not sent and b"[y/N]" in out:
                    os.write(fd, answer.encode() + b"\\n")
                    sent = True
            _, status = os.waitpid(pid, 0)
            sys.stdout.write(out.decode(errors="replace"))
            sys.exit(os.WEXITSTATUS(status))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, SettleBinary.url.path] + arguments + ["--config", world.configPath, answer]
        process.environment = SettleBinary.environment([:])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
